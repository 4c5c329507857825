import { describe, expect, it } from 'vitest';
import { inspectedEvent } from '../../src/inspector/stately-inspector.js';
import { generate, validate } from '../../src/mesh/index.js';
import type { SessionEvent } from '../../src/machines/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { BACKEND } from '../xds/fixtures.js';

const NODE = 'default.backend-1';

describe('an event as the Stately inspector is sent it', () => {
  it('names a generated snapshot by its node, revision, size and versions, never its encoded resources', async () => {
    const store = createMemoryStore({ instance: 'inspector' });
    await store.start();
    try {
      const parsed = validate(BACKEND);
      if (!parsed.ok) throw new Error('fixture is invalid');
      await store.put(parsed.resource);
      const generation = generate(NODE, store.projection);
      if (!generation.ok) throw new Error(generation.error.message);
      const { snapshot } = generation;
      const sent = inspectedEvent({ type: 'snapshot.generated', at: 1, snapshot } satisfies SessionEvent);
      expect(sent).toEqual({
        type: 'snapshot.generated',
        at: 1,
        snapshot: { node: NODE, revision: snapshot.revision, resourceCount: snapshot.resourceCount, versions: expect.objectContaining({ [CLUSTER]: snapshot.types[CLUSTER]!.version }) },
      });
    } finally {
      await store.close();
    }
  });

  it('leaves out the reader an event carries, and keeps its facts', () => {
    const generate = () => ({ ok: false, revision: 1, error: { code: 'X', message: 'x' } }) as const;
    expect(inspectedEvent({ type: 'store.advanced', at: 2, revision: 7, generate } satisfies SessionEvent)).toEqual({ type: 'store.advanced', at: 2, revision: 7 });
    expect(inspectedEvent({ type: 'store.caughtUp', at: 3, streamId: 's', generate } satisfies SessionEvent)).toEqual({ type: 'store.caughtUp', at: 3, streamId: 's' });
    const closed = { type: 'stream.closed', at: 4, streamId: 's', reason: 'gone' } satisfies SessionEvent;
    expect(inspectedEvent(closed)).toBe(closed);
  });
});
