import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelReplay, sinksStillHeld } from './model-replay.js';
import { INITIAL, MTLS_SCENARIOS, mtlsEventsFor, mtlsScenarioPaths, step, type ModelEvent, type ModelPath, type ModelState } from './session-model.js';

/**
 * The model's paths through renewals, a store outage and reconnects, replayed in a mesh with
 * strict mTLS (session-model.test.ts replays the rest without): after every step the server rests
 * where the model says, the client holds what the generator makes of the store with the
 * certificate it holds, and no cluster or listener it holds names a Secret it was not sent (I8).
 */

const paths = mtlsScenarioPaths();
const replays: Array<{ readonly name: string; readonly replay: ModelReplay }> = [];
const named = (path: ModelPath) => path.steps.map((s) => s.event.type).join(' → ');

describe('the mTLS scenarios', () => {
  it('take only events the model allows where they are taken, each renewing at least once', () => {
    for (const types of Object.values(MTLS_SCENARIOS)) {
      let state: ModelState = INITIAL;
      for (const type of types) {
        expect(mtlsEventsFor(state).map((event) => event.type), `${types.join(' → ')}: ${type} from ${JSON.stringify(state)}`).toContain(type);
        state = step(state, { type } as ModelEvent);
      }
      expect(types).toContain('renew');
    }
    expect(paths).toHaveLength(Object.keys(MTLS_SCENARIOS).length);
  });
});

describe.each((['sotw', 'delta'] as const).flatMap((protocol) => paths.map((path) => [protocol, named(path), path] as const)))('replayed with strict mTLS over %s: %s', (protocol, _name, path) => {
  let replay: ModelReplay;
  beforeAll(async () => {
    replay = await ModelReplay.start(protocol, { mtls: true });
    replays.push({ name: `${protocol}: ${named(path)}`, replay });
  });
  afterAll(() => replay.close());

  it('rests where the model says after each step, the client holding every Secret its configuration names (I8)', async () => {
    let before: ModelState = INITIAL;
    for (const [index, { event, state }] of path.steps.entries()) {
      await replay.step(event, before, state.context, `step ${index + 1} (${event.type}) of ${named(path)}`);
      before = state.context;
    }
  });
});

describe('after every mTLS path was replayed', () => {
  it('the sessions hold no stream sink (I3)', async () => {
    expect(replays.length).toBeGreaterThan(0);
    expect(await sinksStillHeld(replays)).toEqual([]);
  });
});
