import type { Server, ServerCredentials } from '@grpc/grpc-js';
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import { bareHost, Fifo, formatHostPort, HOST_PORT_RULE, parseHostPort } from '../common/index.js';
import { ConnectWindow } from './connect-window.js';

/**
 * The accept queue a listener asks the kernel for. grpc-js's own `bindAsync` listens with Node's
 * default of 511, so when a fleet of thousands reconnects at once (a restart, a failover) the
 * queue overflows and the kernel drops the handshakes it cannot queue: each dropped client waits
 * out TCP's SYN back-off (1 s, 3 s, 7 s, 15 s, 31 s …) before it is even accepted. Go's
 * listeners ask for the system's maximum (`net.core.somaxconn`), and so does this one; Linux
 * caps the request at that maximum.
 */
export const ACCEPT_BACKLOG = 65_535;

/**
 * Connections handed to grpc-js per turn of the event loop. In a storm the kernel has thousands
 * of connections ready at once, and one poll phase of the loop would set them all up (HTTP/2,
 * the first request, a session, its first responses) before the loop reaches the phase that
 * flushes what was written: every node would be served at the end of the storm, and nothing
 * else (a change to nodes already served, the API) would run until then. A batch per turn
 * bounds each turn, so the first nodes are served at once and the rest follow in order.
 */
export const CONNECTIONS_PER_TURN = 32;

/**
 * ms of a turn spent handing connections on, at most (the first always goes). Setting up a
 * connection takes 50–150 µs when the process has its core to itself, so the count binds first;
 * when the core is shared (V8's concurrent marking of a large heap on a core-limited host), each
 * takes many times as long, and 32 of them, with the requests they carry, held single turns for
 * 150–450 ms of a storm (bench/README.md).
 */
export const ADMISSION_SLICE_MS = 4;

/**
 * Bytes a waiting connection may have read before it is handed on: its first messages (an HTTP/2
 * preface, settings and a request, or a TLS ClientHello) and no more; then it stops reading.
 */
const WAITING_READ_BYTES = 4_096;

/**
 * Hands accepted connections on at most CONNECTIONS_PER_TURN, and ADMISSION_SLICE_MS, a turn of
 * the event loop, only while the connect window has room, and only once the client has sent something: a connection
 * taken on before its client wrote would bring its request later, in a burst with others, and a
 * silent one would hold a place in the window for nothing. Until then a connection waits (its
 * first bytes read and kept, for HTTP/2 or TLS to take with the socket), in the order it was heard from.
 */
export class PacedAdmission {
  /** Heard from, waiting for the window. */
  readonly #waiting = new Fifo<Socket>();
  /** Accepted, not heard from yet. */
  readonly #silent = new Set<Socket>();
  #admitted = 0;
  /** When this turn's first connection was handed on. */
  #turnStart = 0;
  #turnScheduled = false;

  constructor(
    readonly admit: (socket: Socket) => void,
    readonly window: ConnectWindow,
  ) {}

  /** Connections accepted and not handed on yet. */
  get waiting(): number {
    return this.#waiting.length + this.#silent.size;
  }

  add(socket: Socket): void {
    // A client gone while it waits must not throw: its socket is dropped when its turn comes.
    socket.on('error', ignore);
    this.#silent.add(socket);
    socket.once('close', () => this.#silent.delete(socket));
    // A 'readable' listener reads into the socket's buffer without consuming it.
    socket.once('readable', () => {
      if (!this.#silent.delete(socket)) return;
      // Readable with nothing to read: the client hung up without a word.
      if (socket.readableLength === 0) return void socket.destroy();
      if (this.#waiting.length === 0 && this.#mayAdmit()) this.#admit(socket);
      else this.#waiting.push(socket);
      this.#nextTurn();
    });
  }

  /** The listener closed: connections still waiting are never served, so they are ended now, and their clients reconnect elsewhere. */
  drop(): void {
    for (const socket of this.#waiting.drain()) socket.destroy();
    for (const socket of this.#silent) socket.destroy();
    this.#silent.clear();
  }

  #mayAdmit(): boolean {
    const inBudget = this.#admitted === 0 || (this.#admitted < CONNECTIONS_PER_TURN && this.window.now() - this.#turnStart < ADMISSION_SLICE_MS);
    return inBudget && this.window.hasRoom;
  }

  #admit(socket: Socket): void {
    if (this.#admitted++ === 0) this.#turnStart = this.window.now();
    const peer = peerOf(socket);
    this.window.enter(peer);
    socket.once('close', () => this.window.leave(peer));
    socket.off('error', ignore);
    // HTTP/2 (or TLS) takes the socket's handle over as it is handed on, and what the socket read
    // while it waited with it: the socket is not resumed, which would let its buffer flow away.
    this.admit(socket);
  }

  #nextTurn(): void {
    if (this.#turnScheduled) return;
    this.#turnScheduled = true;
    setImmediate(() => {
      this.#turnScheduled = false;
      this.#admitted = 0;
      while (this.#waiting.length > 0 && this.#mayAdmit()) {
        const socket = this.#waiting.shift()!;
        if (socket.destroyed) socket.off('error', ignore);
        else this.#admit(socket);
      }
      // The window full: no turn is taken until it has room (no loop spinning meanwhile).
      if (this.#waiting.length > 0 && !this.window.hasRoom) this.window.whenRoom(() => this.#nextTurn());
      else if (this.#waiting.length > 0 || this.#admitted > 0) this.#nextTurn();
    });
  }
}

/** A connection's peer as grpc-js's `getPeer` names it, so the server can say which one it answered. */
function peerOf(socket: Socket): string {
  return `${socket.remoteAddress}:${socket.remotePort}`;
}

const ignore = () => {};

/** A bound listener feeding a grpc-js server; `close` stops accepting (served connections stay, waiting ones end). */
export interface GrpcListener {
  /** `host:port` as bound (the port the OS chose for port 0). */
  readonly address: string;
  /** Connections accepted and waiting for the connect window. */
  readonly waiting: number;
  close(): void;
}

/**
 * Listens on `address` with an accept queue of ACCEPT_BACKLOG and hands accepted connections to
 * `server` (grpc-js's connection injector, which serves them exactly as a bound port would, TLS
 * included), CONNECTIONS_PER_TURN at a time while `window` has room. The server tells the window
 * when it answers a connection (`ConnectWindow.leave` with the call's peer).
 */
export function listenForGrpc(server: Server, address: string, credentials: ServerCredentials, window: ConnectWindow): Promise<GrpcListener> {
  const parsed = parseHostPort(address);
  if (parsed === undefined) return Promise.reject(new Error(`"${address}" is not an address to listen on: expected ${HOST_PORT_RULE}`));
  const injector = server.createConnectionInjector(credentials);
  const admission = new PacedAdmission((socket) => injector.injectConnection(socket), window);
  const listener: NetServer = createServer({ noDelay: true, pauseOnConnect: true, highWaterMark: WAITING_READ_BYTES }, (socket) => admission.add(socket));
  return new Promise((resolve, reject) => {
    listener.once('error', reject);
    listener.listen({ host: bareHost(parsed.host), port: parsed.port, backlog: ACCEPT_BACKLOG }, () => {
      listener.off('error', reject);
      const bound = listener.address();
      const port = typeof bound === 'object' && bound !== null ? bound.port : parsed.port;
      const close = () => {
        listener.close();
        admission.drop();
      };
      resolve({
        address: formatHostPort({ host: parsed.host, port }),
        get waiting() {
          return admission.waiting;
        },
        close,
      });
    });
  });
}
