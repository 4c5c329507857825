/**
 * A tiny gRPC backend for the walk-through: `npx tsx examples/greeter-backend.ts backend-1 50051`
 * serves `/demo.Greeter/Hello` on 127.0.0.1:<port> and answers with its own name.
 */
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { greeterService } from './greeter-service.js';

const [name = 'backend-1', port = '50051'] = process.argv.slice(2);
const server = new Server();
server.addService(greeterService, {
  Hello: (call: ServerUnaryCall<{ from: string }, { servedBy: string }>, callback: sendUnaryData<{ servedBy: string }>) => {
    callback(null, { servedBy: name });
  },
});
server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error, bound) => {
  if (error) throw error;
  console.log(`${name} serving /demo.Greeter/Hello on 127.0.0.1:${bound}`);
});
process.on('SIGINT', () => server.tryShutdown(() => process.exit(0)));
