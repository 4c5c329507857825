import { describe, expect, it } from 'vitest';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { eventLogContract } from './event-log-contract.js';
import { sessionRecordsContract } from './session-records-contract.js';
import { author, mesh } from './fixtures.js';

eventLogContract('MemoryEventLog', async () => new MemoryEventLog());
sessionRecordsContract('MemoryEventLog', async () => new MemoryEventLog());

describe('MemoryEventLog', () => {
  it('stamps events with the injected clock', async () => {
    const log = new MemoryEventLog({ now: () => new Date('2030-05-06T07:08:09.000Z') });
    const [event] = await log.append([{ kind: 'upserted', resource: mesh('a') }], author);
    expect(event!.at).toBe('2030-05-06T07:08:09.000Z');
  });
});
