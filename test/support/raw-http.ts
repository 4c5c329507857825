import { connect } from 'node:net';

export interface RawResponse {
  readonly status: number;
  /** Header names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * Sends `request` byte for byte to `address` (`host:port`) and reads the answer until the
 * server closes: for requests fetch refuses to send (a malformed request line, a header over
 * 16 KiB, a NUL in the path). The request should ask for `Connection: close`, or be one the
 * server closes the connection after.
 */
export async function rawHttp(address: string, request: string | Buffer): Promise<RawResponse> {
  return parseResponse(await received(address, request));
}

/** Sends `request` as `rawHttp` does, and answers every byte the server sent back, as text. */
export async function rawBytes(address: string, request: string | Buffer): Promise<string> {
  return (await received(address, request)).toString('utf8');
}

function received(address: string, request: string | Buffer): Promise<Buffer> {
  const colon = address.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(address.slice(colon + 1)), address.slice(0, colon));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.end(request);
  });
}

function parseResponse(received: Buffer): RawResponse {
  let bytes = received;
  // Interim answers (100 Continue) come before the response.
  while (/^HTTP\/1\.1 1\d\d /.test(bytes.subarray(0, 13).toString('latin1'))) bytes = bytes.subarray(bytes.indexOf('\r\n\r\n') + 4);
  const split = bytes.indexOf('\r\n\r\n');
  if (split === -1) throw new Error(`no HTTP response, got ${JSON.stringify(bytes.subarray(0, 200).toString())}`);
  const [statusLine = '', ...lines] = bytes.subarray(0, split).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  const raw = bytes.subarray(split + 4);
  return { status, headers, body: (headers['transfer-encoding'] === 'chunked' ? unchunk(raw) : raw).toString('utf8') };
}

function unchunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let rest = raw; ; ) {
    const end = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.subarray(0, end).toString('latin1'), 16);
    if (!(size > 0)) return Buffer.concat(parts);
    parts.push(rest.subarray(end + 2, end + 2 + size));
    rest = rest.subarray(end + 2 + size + 2);
  }
}
