import type { ServiceDefinition } from '@grpc/grpc-js';

const json = {
  serialize: (value: unknown) => Buffer.from(JSON.stringify(value)),
  deserialize: (bytes: Buffer) => JSON.parse(bytes.toString()) as unknown,
};

/** A greeter's answer: who served it, and over mTLS the URI SAN of the client's certificate. */
export interface Hello {
  readonly servedBy: string;
  readonly client?: string;
}

/** One unary method with JSON messages, so the demo needs no .proto file. */
export const greeterService: ServiceDefinition = {
  Hello: {
    path: '/demo.Greeter/Hello',
    requestStream: false,
    responseStream: false,
    requestSerialize: json.serialize,
    requestDeserialize: json.deserialize,
    responseSerialize: json.serialize,
    responseDeserialize: json.deserialize,
  },
};
