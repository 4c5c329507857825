import { Server, ServerCredentials, status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { ECHO_SERVICE, type EchoReply, type EchoRequest } from './echo-backend.js';

/** How a scripted gRPC backend answers: `ok` at once; `slow` after `delayMs`; `flaky` UNAVAILABLE on every other call. */
export type GrpcBehaviour = { readonly kind: 'ok' } | { readonly kind: 'slow'; readonly delayMs: number } | { readonly kind: 'flaky' };

/** A real grpc-js echo server on 127.0.0.1 answering as a test scripts it, with its own name. */
export interface ScriptedGrpcBackend {
  readonly name: string;
  readonly port: number;
  /** Calls it has received. */
  readonly received: number;
  behave(behaviour: GrpcBehaviour): void;
  stop(): Promise<void>;
}

export async function startScriptedGrpcBackend(name: string): Promise<ScriptedGrpcBackend> {
  const server = new Server();
  let behaviour: GrpcBehaviour = { kind: 'ok' };
  let received = 0;
  const timers = new Set<NodeJS.Timeout>();
  server.addService(ECHO_SERVICE, {
    Echo: (_call: ServerUnaryCall<EchoRequest, EchoReply>, callback: sendUnaryData<EchoReply>) => {
      received += 1;
      if (behaviour.kind === 'flaky' && received % 2 === 0) return callback({ code: status.UNAVAILABLE, details: `${name} fails every other call` });
      if (behaviour.kind !== 'slow') return callback(null, { servedBy: name });
      const timer = setTimeout(() => {
        timers.delete(timer);
        callback(null, { servedBy: name });
      }, behaviour.delayMs);
      timers.add(timer);
      return undefined;
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    name,
    port,
    get received() {
      return received;
    },
    behave(next) {
      behaviour = next;
    },
    stop: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.forceShutdown();
    },
  };
}
