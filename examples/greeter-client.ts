/**
 * A proxyless gRPC client for the walk-through: it resolves `xds:///greeter` through Chancery
 * as node default.client and says hello twice a second, printing which backend answered.
 * `npx tsx examples/greeter-client.ts [service]`. Its bootstrap is the file GRPC_XDS_BOOTSTRAP
 * names (`npx chancery bootstrap grpc --node default.client --output client.json`) or, without
 * it, what Chancery's API at CHANCERY_API_ADDRESS (127.0.0.1:5681) answers for that node.
 *
 * Its credentials are xDS credentials (gRFC A29): plaintext unless Chancery's cluster asks for
 * mTLS, then the certificate files its bootstrap names (`--certificates DIR`, kept by
 * `chancery agent`).
 */
import { credentials, makeGenericClientConstructor } from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { greeterService, type Hello } from './greeter-service.js';

if (process.env.GRPC_XDS_BOOTSTRAP === undefined) {
  const api = process.env.CHANCERY_API_ADDRESS ?? '127.0.0.1:5681';
  const response = await fetch(`http://${api}/meshes/default/dataplanes/client/bootstrap?format=grpc`);
  if (!response.ok) throw new Error(`Chancery at ${api} answered ${response.status} for the bootstrap of default.client: ${await response.text()}`);
  process.env.GRPC_XDS_BOOTSTRAP_CONFIG = await response.text();
}
xds.register();

const service = process.argv[2] ?? 'greeter';
const Greeter = makeGenericClientConstructor(greeterService, 'Greeter');
const client = new Greeter(`xds:///${service}`, new xds.XdsChannelCredentials(credentials.createInsecure())) as unknown as {
  Hello(request: object, options: { deadline: Date }, callback: (error: Error | null, reply?: Hello) => void): void;
};

setInterval(() => {
  client.Hello({ from: 'client' }, { deadline: new Date(Date.now() + 2_000) }, (error, reply) => {
    if (error || reply === undefined) return console.log(`failed: ${error?.message}`);
    console.log(`answered by ${reply.servedBy}${reply.client === undefined ? '' : `, over mTLS (it saw ${reply.client})`}`);
  });
}, 500);
