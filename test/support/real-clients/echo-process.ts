import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { status } from '@grpc/grpc-js';
import type { EchoReply } from '../echo-backend.js';
import { testPython } from '../python.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** The two proxyless gRPC clients, each unchanged in a process of its own. */
export const PROXYLESS_KINDS = ['grpc-js-xds', 'c-core'] as const;
export type ProxylessKind = (typeof PROXYLESS_KINDS)[number];

/** What configures a proxyless client: only its environment, as users run it. */
export interface ClientEnvironment {
  readonly GRPC_XDS_BOOTSTRAP: string;
  readonly GOOGLE_APPLICATION_CREDENTIALS?: string;
  readonly GRPC_DEFAULT_SSL_ROOTS_FILE_PATH?: string;
}

/**
 * A client's own account of its ADS streams, read from the trace gRPC writes with
 * `GRPC_TRACE=xds_client` (and `xds_resolver` for grpc-js): what it received and decided, as
 * opposed to what Chancery says it sent.
 */
export interface ClientXdsView {
  /** ADS streams it started. */
  readonly streams: number;
  /** How each ADS stream ended, by gRPC status name (`UNAUTHENTICATED`), with its details. */
  readonly streamEnds: ReadonlyArray<{ readonly code: string; readonly details: string }>;
  /**
   * Trace lines only a received response produces: C-core logs "received ADS response" for each;
   * grpc-js logs each resource it parses, and ACKs or NACKs each response with its nonce.
   */
  readonly responses: number;
  /**
   * Each time it concluded that a resource it uses does not exist: told so by a response that
   * left it out (a wipe), or never sent it. The client then fails its RPCs.
   */
  readonly missing: readonly string[];
}

/** An RPC the client made and the backend or the client refused: its status and details. */
export class RpcFailed extends Error {}

/**
 * A proxyless client on one channel to `xds:///<service>`, in a process of its own: gRPC reads
 * its bootstrap and credentials once per process, so each client needs its own.
 */
export interface EchoProcess {
  readonly kind: ProxylessKind;
  /** One RPC on its channel; rejects with `RpcFailed` naming the status, or with why the process ended. */
  echo(deadlineMs: number): Promise<EchoReply>;
  xds(): ClientXdsView;
  /** Resolves once it has exited: `null` and the signal when killed. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>;
  kill(): void;
  /** Kills it and resolves once it has exited. */
  stop(): Promise<void>;
}

/** Trace lines, by client: how it logs a stream starting, ending, a response, and a resource it concluded does not exist. */
const TRACE = {
  // C-core: `starting ADS call`, `ADS call status received (xds_channel=…, …): UNAUTHENTICATED: <details>`,
  // `received ADS response: …`, and from its resolver `LDS resource backend: does not exist`.
  'c-core': {
    start: /starting ADS call/,
    end: (line: string) => /ADS call status received \([^)]*\): ([A-Z_]+)(?:: (.*))?$/.exec(line)?.slice(1),
    response: /received ADS response:/,
  },
  // grpc-js-xds: `Starting ADS stream`, `ADS stream ended. code=16 details= <details>`, each
  // resource parsed and each ACK naming its nonce, and from its resolver `LDS resource does not exist`.
  'grpc-js-xds': {
    start: /Starting ADS stream/,
    end: (line: string) => {
      const match = /ADS stream ended\. code=(\d+) details= ?(.*)$/.exec(line);
      return match && [status[Number(match[1])] ?? match[1]!, match[2]!];
    },
    response: /"response_nonce": "[^"]+"|Parsed resource of type|Failed to parse resource|ADS response field parsing failed|Type state not found/,
  },
} as const;
const MISSING = /\bdoes not exist\b/;

/** Starts `kind` calling `xds:///<service>`, configured by `env` alone, with its xDS trace on. */
export function startEchoProcess(kind: ProxylessKind, service: string, env: ClientEnvironment): EchoProcess {
  const [command, args] =
    kind === 'grpc-js-xds'
      ? [process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/fixtures/xds-echo-client.ts'), service]]
      : [testPython(), [path.join(ROOT, 'test/fixtures/xds_echo_client.py'), service]];
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, GRPC_TRACE: 'xds_client,xds_resolver', GRPC_VERBOSITY: 'DEBUG', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

  const view = { streams: 0, streamEnds: [] as Array<{ code: string; details: string }>, responses: 0, missing: [] as string[] };
  let stderr = '';
  const trace = TRACE[kind];
  createInterface({ input: child.stderr }).on('line', (line) => {
    stderr = `${stderr}${line}\n`.slice(-4_000);
    if (trace.start.test(line)) view.streams++;
    const end = trace.end(line);
    if (end) view.streamEnds.push({ code: end[0]!, details: end[1] ?? '' });
    if (trace.response.test(line)) view.responses++;
    if (MISSING.test(line)) view.missing.push(line.trim());
  });

  // The process answers in the order it was asked: each line settles the oldest call waiting.
  const waiting: Array<{ resolve(reply: EchoReply): void; reject(error: Error): void }> = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const outcome = JSON.parse(line) as { servedBy: string } | { error: string };
    const call = waiting.shift();
    if ('servedBy' in outcome) call?.resolve(outcome);
    else call?.reject(new RpcFailed(`${kind}: ${outcome.error}`));
  });
  void exited.then(({ code, signal }) => {
    for (const call of waiting.splice(0)) call.reject(new Error(`the ${kind} client exited (${code ?? signal}) before answering:\n${stderr}`));
  });

  return {
    kind,
    echo: (deadlineMs) =>
      new Promise<EchoReply>((resolve, reject) => {
        if (child.exitCode !== null || child.signalCode !== null) return reject(new Error(`the ${kind} client has exited`));
        waiting.push({ resolve, reject });
        child.stdin.write(`${deadlineMs}\n`);
      }),
    xds: () => ({ ...view, streamEnds: [...view.streamEnds], missing: [...view.missing] }),
    exited,
    kill: () => child.kill('SIGKILL'),
    stop: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
