/**
 * A proxyless gRPC client for the walk-through: it resolves `xds:///greeter` through Chancery
 * (bootstrap: examples/xds-bootstrap.json, node id default.client) and says hello twice a
 * second, printing which backend answered. `npx tsx examples/greeter-client.ts [service]`
 */
import { credentials, makeGenericClientConstructor } from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { fileURLToPath } from 'node:url';
import { greeterService } from './greeter-service.js';

process.env.GRPC_XDS_BOOTSTRAP ??= fileURLToPath(new URL('./xds-bootstrap.json', import.meta.url));
xds.register();

const service = process.argv[2] ?? 'greeter';
const Greeter = makeGenericClientConstructor(greeterService, 'Greeter');
const client = new Greeter(`xds:///${service}`, credentials.createInsecure()) as unknown as {
  Hello(request: object, options: { deadline: Date }, callback: (error: Error | null, reply?: { servedBy: string }) => void): void;
};

setInterval(() => {
  client.Hello({ from: 'client' }, { deadline: new Date(Date.now() + 2_000) }, (error, reply) => {
    console.log(error ? `failed: ${error.message}` : `answered by ${reply?.servedBy}`);
  });
}, 500);
