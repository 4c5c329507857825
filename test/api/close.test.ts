import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startApi } from './api-harness.js';

describe('closing the API', () => {
  it('closes a connection whose request never ends once its time is up, rather than wait for the client', async () => {
    const api = await startApi();
    const [host, port] = api.address.split(':') as [string, string];
    const socket = connect(Number(port), host);
    socket.write(`POST /meshes HTTP/1.1\r\nHost: ${api.address}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`);
    // The server answers 100 Continue once the request is in its hands; the body never comes.
    const [first] = (await once(socket, 'data')) as [Buffer];
    expect(first.toString()).toMatch(/^HTTP\/1\.1 100 Continue/);
    const closed = once(socket, 'close');
    await api.close(50);
    await closed;
    expect(socket.destroyed).toBe(true);
  });
});
