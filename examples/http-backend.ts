/**
 * A tiny HTTP app for the Envoy walk-through: `npx tsx examples/http-backend.ts echo-1 8081`
 * listens on 127.0.0.1:<port>, the app port behind its Envoy sidecar's inbound listener, and
 * answers every request with its own name.
 */
import { createServer } from 'node:http';

const [name = 'echo-1', port = '8081'] = process.argv.slice(2);
createServer((_request, response) => response.end(`answered by ${name}\n`)).listen(Number(port), '127.0.0.1', () => {
  console.log(`${name} answering HTTP on 127.0.0.1:${port}`);
});
