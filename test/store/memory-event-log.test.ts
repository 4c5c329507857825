import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/store/errors.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { asSeq } from '../../src/store/types.js';
import { eventLogContract } from './event-log-contract.js';
import { author, mesh } from './fixtures.js';

eventLogContract('MemoryEventLog', async () => new MemoryEventLog());

describe('MemoryEventLog', () => {
  it('numbers events from seq 1 without gaps', async () => {
    const log = new MemoryEventLog();
    await log.append([{ kind: 'upserted', resource: mesh('a') }, { kind: 'upserted', resource: mesh('b') }], author);
    await log.append([{ kind: 'upserted', resource: mesh('c') }], author);
    expect((await log.readAfter(asSeq(0), 10)).map((event) => event.seq)).toEqual([1, 2, 3]);
  });

  it('stamps events with the injected clock', async () => {
    const log = new MemoryEventLog({ now: () => new Date('2030-05-06T07:08:09.000Z') });
    const [event] = await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
    expect(event!.at).toBe('2030-05-06T07:08:09.000Z');
  });

  it('rejects reads and appends with StoreUnavailableError once closed', async () => {
    const log = new MemoryEventLog();
    await log.close();
    await expect(log.readAfter(asSeq(0), 10)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(log.append([{ kind: 'upserted', resource: mesh('a') }], author)).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
