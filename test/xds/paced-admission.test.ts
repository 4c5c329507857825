import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConnectWindow } from '../../src/xds/connect-window.js';
import { ADMISSION_SLICE_MS, CONNECTIONS_PER_TURN, PacedAdmission } from '../../src/xds/grpc-listener.js';

/** The part of an accepted socket the admission reads: its events, what it has read, its peer. */
class HeardFrom extends EventEmitter {
  readonly readableLength = 64;
  readonly remoteAddress = '127.0.0.1';
  destroyed = false;
  constructor(readonly remotePort: number) {
    super();
  }
  destroy(): void {
    this.destroyed = true;
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** `count` connections accepted and heard from within one turn; handing one on takes `costMs` on the window's clock. */
function storm(count: number, costMs: number) {
  let now = 0;
  const admitted: number[] = [];
  const admission = new PacedAdmission(
    (socket) => {
      admitted.push(socket.remotePort!);
      now += costMs;
    },
    new ConnectWindow({ max: 1_000, patienceMs: 60_000, now: () => now }),
  );
  for (let port = 1; port <= count; port++) {
    const socket = new HeardFrom(port);
    admission.add(socket as unknown as Socket);
    socket.emit('readable');
  }
  return { admitted, admission };
}

describe('paced admission', () => {
  it('hands on at most CONNECTIONS_PER_TURN connections a turn while each is quick', async () => {
    const { admitted, admission } = storm(CONNECTIONS_PER_TURN + 8, 0);
    expect(admitted).toHaveLength(CONNECTIONS_PER_TURN);
    expect(admission.waiting).toBe(8);
    await nextTurn();
    expect(admitted).toHaveLength(CONNECTIONS_PER_TURN + 8);
    expect(admitted).toEqual([...admitted].sort((a, b) => a - b));
  });

  it('stops a turn once ADMISSION_SLICE_MS is spent, the first connection always going', async () => {
    // Each takes longer than the slice: one a turn, in the order they were heard from.
    const slow = storm(4, ADMISSION_SLICE_MS + 1);
    expect(slow.admitted).toEqual([1]);
    await nextTurn();
    expect(slow.admitted).toEqual([1, 2]);
    await nextTurn();
    await nextTurn();
    expect(slow.admitted).toEqual([1, 2, 3, 4]);
    expect(slow.admission.waiting).toBe(0);

    // A quarter of the slice each: four go before the clock says stop.
    const quarter = storm(10, ADMISSION_SLICE_MS / 4);
    expect(quarter.admitted).toEqual([1, 2, 3, 4]);
  });
});
