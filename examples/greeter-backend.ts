/**
 * A tiny gRPC backend for the walk-through: `npx tsx examples/greeter-backend.ts backend-1 50051`
 * serves `/demo.Greeter/Hello` on 127.0.0.1:<port> and answers with its own name.
 *
 * With GRPC_XDS_BOOTSTRAP naming a bootstrap (`chancery bootstrap grpc --certificates DIR`), it
 * is an xDS-enabled server instead (gRFC A36): it serves once Chancery sent the Listener of its
 * inbound, over mTLS when that Listener says so, and its answers name the certificate the client
 * presented.
 */
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import { greeterService, type Hello } from './greeter-service.js';

const [name = 'backend-1', port = '50051'] = process.argv.slice(2);
const xdsEnabled = process.env.GRPC_XDS_BOOTSTRAP !== undefined;
if (xdsEnabled) xds.register();
const server = xdsEnabled ? new xds.XdsServer() : new Server();
server.addService(greeterService, {
  Hello: (call: ServerUnaryCall<object, Hello>, callback: sendUnaryData<Hello>) => {
    const client = call.getAuthContext().sslPeerCertificate?.subjectaltname;
    callback(null, { servedBy: name, ...(client !== undefined && { client }) });
  },
});
const insecure = ServerCredentials.createInsecure();
server.bindAsync(`127.0.0.1:${port}`, xdsEnabled ? new xds.XdsServerCredentials(insecure) : insecure, (error, bound) => {
  if (error) throw error;
  console.log(`${name} serving /demo.Greeter/Hello on 127.0.0.1:${bound}${xdsEnabled ? ', as Chancery’s Listener for it says' : ''}`);
});
process.on('SIGINT', () => server.tryShutdown(() => process.exit(0)));
