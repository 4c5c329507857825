import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ApiRejectedError, ApiUnreachableError, type RejectionBody, UnexpectedResponseError } from './errors.js';

// Long enough for a store write under load, short enough that a wedged server does not hang a script.
const REQUEST_TIMEOUT_MS = 30_000;

export interface ApiAnswer {
  readonly status: number;
  /** Parsed JSON; undefined for 204. */
  readonly body: unknown;
  /** Response headers, by lower-case name (a repeated one joined with `, `). */
  readonly headers: Readonly<Record<string, string>>;
  /** The text of each `Warning` header: a write's warnings (issue 31). */
  readonly warnings: readonly string[];
}

/** How the client reaches and proves itself to the API. */
export interface ApiConnection {
  readonly address: string;
  /** An API token, sent as `Authorization: Bearer …`. */
  readonly token?: string;
  /** HTTPS, trusting this CA (PEM); plain HTTP without it. */
  readonly ca?: Buffer;
  /** A client certificate and key (PEM), for an API that asks for one (`--api-tls-client-ca`). */
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** The HTTP API of one running instance, for the client commands. */
export class ApiClient {
  readonly #connection: ApiConnection;

  constructor(connection: ApiConnection) {
    this.#connection = connection;
  }

  get address(): string {
    return this.#connection.address;
  }

  /**
   * Sends one request. Rejects with `ApiUnreachableError` when no HTTP answer comes,
   * `ApiRejectedError` for a 4xx/5xx carrying an API error body, and
   * `UnexpectedResponseError` for anything that is not the API's JSON.
   */
  async request(method: Method, path: string, body?: unknown): Promise<ApiAnswer> {
    const { status, text, headers, warnings } = await this.#send(method, path, body, {});
    const parsed = text === '' ? undefined : parseJson(text);
    if (ok(status) && (parsed !== undefined || status === 204)) return { status, body: parsed, headers, warnings };
    throw this.#refusal(status, text, parsed);
  }

  /** A GET whose answer is a document (YAML, JSON) to print as it is; refused as `request` is. */
  async text(path: string, headers: Readonly<Record<string, string>> = {}): Promise<string> {
    const { status, text } = await this.#send('GET', path, undefined, headers);
    if (ok(status)) return text;
    throw this.#refusal(status, text, parseJson(text));
  }

  #send(
    method: Method,
    path: string,
    body: unknown,
    extra: Readonly<Record<string, string>>,
  ): Promise<{ status: number; text: string; headers: Record<string, string>; warnings: string[] }> {
    const { address, token, ca, cert, key } = this.#connection;
    const colon = address.lastIndexOf(':');
    const headers: Record<string, string> = { ...extra, ...(token !== undefined && { authorization: `Bearer ${token}` }) };
    const payload = body === undefined ? undefined : JSON.stringify(body);
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const options = {
      method,
      host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'),
      port: Number(address.slice(colon + 1)),
      path,
      headers,
      timeout: REQUEST_TIMEOUT_MS,
      ...(ca && { ca, ...(cert && key && { cert, key }) }),
    };
    return new Promise((resolve, reject) => {
      const answer = (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            text: Buffer.concat(chunks).toString(),
            headers: headersOf(response),
            warnings: (response.headersDistinct['warning'] ?? []).map(warningText),
          }),
        );
        response.on('error', (error) => reject(new ApiUnreachableError(address, error.message, { cause: error })));
      };
      const sent = ca ? httpsRequest(options, answer) : httpRequest(options, answer);
      sent.on('timeout', () => sent.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS / 1000}s`)));
      sent.on('error', (error) => reject(new ApiUnreachableError(address, error.message, { cause: error })));
      sent.end(payload);
    });
  }

  #refusal(status: number, text: string, parsed: unknown): Error {
    if (!ok(status) && isRejection(parsed)) return new ApiRejectedError(status, parsed);
    return new UnexpectedResponseError(this.address, status, text);
  }
}

function headersOf(response: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** The text of a `Warning: 299 agent "text"` header (RFC 9111 §5.5), unquoted; the value as it is otherwise. */
function warningText(value: string): string {
  const quoted = /^\d{3} \S+ "((?:[^"\\]|\\.)*)"/.exec(value);
  return quoted?.[1] === undefined ? value : quoted[1].replace(/\\(.)/g, '$1');
}

function ok(status: number): boolean {
  return status >= 200 && status < 300;
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
