import { Agent, get } from 'node:http';
import { performance } from 'node:perf_hooks';

/** One GET, timed from the request to the last byte of the body. */
export interface TimedResponse {
  readonly ms: number;
  readonly status: number;
  readonly bytes: number;
  readonly body: Buffer;
}

/** Keep-alive connections, as a browser holds them: at most `sockets` requests at once. */
export function browserAgent(sockets = 6): Agent {
  return new Agent({ keepAlive: true, maxSockets: sockets });
}

/** GETs `url` and reads the whole body; rejects on a network error or after `timeoutMs`. */
export function timedGet(url: string, agent: Agent, timeoutMs = 30_000): Promise<TimedResponse> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = get(url, { agent, headers: { accept: 'application/json' } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ ms: performance.now() - started, status: response.statusCode ?? 0, bytes: body.length, body });
      });
    });
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`GET ${url} took more than ${timeoutMs} ms`)));
    request.on('error', (error) => reject(new Error(`GET ${url}: ${error.message}`, { cause: error })));
  });
}

/** `repetitions` GETs of one URL, one after another (or fewer once `budgetMs` is spent, but at least `minimum`). */
export interface RouteTimes {
  readonly status: number;
  readonly bytes: number;
  /** The first request's time: caches (the chart's renderer, the JIT) are cold. */
  readonly firstMs: number;
  /** The others'. */
  readonly ms: readonly number[];
}

export async function timeRoute(url: string, agent: Agent, limits: { repetitions: number; minimum: number; budgetMs: number }): Promise<RouteTimes> {
  const first = await timedGet(url, agent);
  if (first.status !== 200) throw new Error(`GET ${url} answered ${first.status}: ${first.body.toString('utf8', 0, 300)}`);
  const ms: number[] = [];
  const deadline = performance.now() + limits.budgetMs;
  while (ms.length < limits.repetitions && (ms.length < limits.minimum || performance.now() < deadline)) {
    const response = await timedGet(url, agent);
    if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status} on repetition ${ms.length + 1}`);
    ms.push(response.ms);
  }
  return { status: first.status, bytes: first.bytes, firstMs: first.ms, ms };
}

/**
 * What a browser fetches to show the fleet page: the document, then its stylesheet, scripts and
 * first data at once (six connections). Resolves with the time until the last byte arrived.
 */
export async function timePageLoad(base: string, assets: readonly string[], data: readonly string[], agent: Agent): Promise<number> {
  const started = performance.now();
  await timedGet(`${base}/ui`, agent);
  const responses = await Promise.all([...assets, ...data].map((path) => timedGet(`${base}${path}`, agent)));
  const failed = responses.find((response) => response.status !== 200);
  if (failed) throw new Error(`loading the fleet page: a request answered ${failed.status}`);
  return performance.now() - started;
}
