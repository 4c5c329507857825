import {
  Client,
  Server,
  ServerCredentials,
  credentials,
  type ChannelOptions,
  type ServerUnaryCall,
  type ServiceDefinition,
  type ServiceError,
  type sendUnaryData,
} from '@grpc/grpc-js';

/** What the echo method takes: anything, echoed back. */
export interface EchoRequest {
  readonly message?: string;
}

/** What the echo method answers: the name of the backend that served the call. */
export interface EchoReply {
  readonly servedBy: string;
  readonly message?: string;
}

/** The full method path a client calls. */
export const ECHO_PATH = '/chancery.test.Echo/Echo';

const toJson = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const fromJson = <T>(bytes: Buffer): T => JSON.parse(bytes.toString('utf8')) as T;

/** A unary service defined without a .proto file: JSON on the wire. */
export const ECHO_SERVICE: ServiceDefinition = {
  Echo: {
    path: ECHO_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: toJson,
    requestDeserialize: fromJson<EchoRequest>,
    responseSerialize: toJson,
    responseDeserialize: fromJson<EchoReply>,
  },
};

/** A real grpc-js server on 127.0.0.1 answering every echo with its own name. */
export interface EchoBackend {
  readonly name: string;
  readonly port: number;
  readonly address: string;
  /** Calls this backend has answered. */
  readonly served: number;
  stop(): Promise<void>;
}

/** Starts an echo backend on a port the OS chooses. */
export async function startEchoBackend(name: string): Promise<EchoBackend> {
  const server = new Server();
  let served = 0;
  server.addService(ECHO_SERVICE, {
    Echo: (call: ServerUnaryCall<EchoRequest, EchoReply>, callback: sendUnaryData<EchoReply>) => {
      served += 1;
      const { message } = call.request;
      callback(null, message === undefined ? { servedBy: name } : { servedBy: name, message });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    name,
    port,
    address: `127.0.0.1:${port}`,
    get served() {
      return served;
    },
    // Tests end their clients first; forcing keeps a straggler connection from holding vitest open.
    stop: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}

/** A client of the echo method, over any target grpc-js can dial (`127.0.0.1:port`, `xds:///service`). */
export class EchoClient {
  readonly #client: Client;

  constructor(target: string, options: ChannelOptions = {}) {
    this.#client = new Client(target, credentials.createInsecure(), options);
  }

  /** One unary call; every call has a deadline, so a test can never hang on one. */
  echo(deadlineMs: number, request: EchoRequest = {}): Promise<EchoReply> {
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest<EchoRequest, EchoReply>(
        ECHO_PATH,
        toJson,
        fromJson<EchoReply>,
        request,
        { deadline: Date.now() + deadlineMs },
        (error: ServiceError | null, reply?: EchoReply) => (error || !reply ? reject(error ?? new Error('empty reply')) : resolve(reply)),
      );
    });
  }

  close(): void {
    this.#client.close();
  }
}
