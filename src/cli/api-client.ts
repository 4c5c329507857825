import { ApiRejectedError, ApiUnreachableError, type RejectionBody, UnexpectedResponseError } from './errors.js';

// Long enough for a store write under load, short enough that a wedged server does not hang a script.
const REQUEST_TIMEOUT_MS = 30_000;

export interface ApiAnswer {
  readonly status: number;
  /** Parsed JSON; undefined for 204. */
  readonly body: unknown;
}

/** The HTTP API of one running instance, for the client commands. */
export class ApiClient {
  readonly #base: string;

  constructor(readonly address: string) {
    this.#base = `http://${address}`;
  }

  /**
   * Sends one request. Rejects with `ApiUnreachableError` when no HTTP answer comes,
   * `ApiRejectedError` for a 4xx/5xx carrying an API error body, and
   * `UnexpectedResponseError` for anything that is not the API's JSON.
   */
  async request(method: 'GET' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<ApiAnswer> {
    const { response, text } = await this.#send(method, path, body);
    const parsed = text === '' ? undefined : parseJson(text);
    if (response.ok && (parsed !== undefined || response.status === 204)) return { status: response.status, body: parsed };
    throw this.#refusal(response, text, parsed);
  }

  /** A GET whose answer is a document (YAML, JSON) to print as it is; refused as `request` is. */
  async text(path: string): Promise<string> {
    const { response, text } = await this.#send('GET', path, undefined);
    if (response.ok) return text;
    throw this.#refusal(response, text, parseJson(text));
  }

  async #send(method: string, path: string, body: unknown): Promise<{ response: Response; text: string }> {
    let response: Response;
    try {
      response = await fetch(`${this.#base}${path}`, {
        method,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new ApiUnreachableError(this.address, reasonOf(error), { cause: error });
    }
    return { response, text: await response.text() };
  }

  #refusal(response: Response, text: string, parsed: unknown): Error {
    if (!response.ok && isRejection(parsed)) return new ApiRejectedError(response.status, parsed);
    return new UnexpectedResponseError(this.address, response.status, text);
  }
}

function reasonOf(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS / 1000}s`;
  // fetch reports "fetch failed" and puts the socket error (ECONNREFUSED, ENOTFOUND) in `cause`.
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRejection(body: unknown): body is RejectionBody {
  return typeof body === 'object' && body !== null && typeof (body as RejectionBody).code === 'string' && typeof (body as RejectionBody).reason === 'string';
}
