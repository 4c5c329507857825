import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errorResponse, type ServerLimits } from './error-response.js';
import { HeadersTooLargeError, MalformedRequestError, RequestTimeoutError } from './errors.js';

/**
 * Answers a request Node's HTTP parser could not read (fastify's `clientErrorHandler`), with
 * the same `{ code, reason }` body as every other refusal, then closes the connection: after
 * a parse error nothing more on it can be trusted to start a request.
 */
export function answerClientError(error: Error & { readonly code?: string }, socket: Socket, limits: ServerLimits): void {
  // The peer is gone: there is no one to answer (Node's own handler does the same).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new HeadersTooLargeError()
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new RequestTimeoutError()
        : new MalformedRequestError('the request is not valid HTTP/1.1', { cause: error });
  const { status, body } = errorResponse(refusal, limits);
  const text = JSON.stringify(body);
  // Bytes after a request the server is answering (its headers ended early) are not a request
  // of their own: once that answer has begun, a second would read as the reply to something the
  // peer never sent. Node's own handler keeps the same rule.
  const answering = (socket as Socket & { readonly _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && answering?.headersSent !== true) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy(error);
}
