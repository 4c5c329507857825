import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelReplay } from './model-replay.js';
import { eventsFor, INITIAL, modelPaths, SCENARIOS, step, type ModelEvent, type ModelPath, type ModelState } from './session-model.js';

/**
 * Model-based: paths through a reference model of a session (session-model.ts, written apart
 * from the server's chart) are replayed against a real control plane made by
 * `createControlPlane`, with an Envoy-like client that names the versions it holds and ACKs
 * every response. After every step the server must rest where the model says, the client must
 * hold what the generator makes of the store, and no invariant may break (model-replay.ts).
 */

const paths = modelPaths();

/** A path as a line: its events in order. */
const named = (path: ModelPath) => path.steps.map((s) => s.event.type).join(' → ');

/** Whether `sequence` occurs in `path`, in order, as consecutive events. */
function contains(path: ModelPath, sequence: readonly ModelEvent['type'][]): boolean {
  const types = path.steps.map((s) => s.event.type);
  return types.some((_, start) => sequence.every((type, i) => types[start + i] === type));
}

describe('the model paths', () => {
  it('take only events the model allows where they are taken', () => {
    for (const types of Object.values(SCENARIOS)) {
      let state: ModelState = INITIAL;
      for (const type of types) {
        expect(eventsFor(state).map((event) => event.type), `${types.join(' → ')}: ${type} from ${JSON.stringify(state)}`).toContain(type);
        state = step(state, { type } as ModelEvent);
      }
    }
  });

  it('reach every phase, go deep, and cover what the chart must get right', () => {
    expect(new Set(paths.map((path) => path.state.context.phase))).toEqual(
      new Set(['none', 'generating', 'store-unreadable', 'serving', 'disconnected', 'evicted', 'stopped']),
    );
    expect(Math.max(...paths.map((path) => path.steps.length))).toBeGreaterThanOrEqual(8);
    const served = (path: ModelPath, index: number) => path.steps[index]?.state.context.phase === 'serving';
    // The seed: served, closed, reconnected and served again, before the grace and after it.
    expect(paths.some((path) => path.steps.some((s, i) => s.event.type === 'reconnect' && served(path, i) && contains(path, ['close', 'reconnect'])))).toBe(true);
    expect(paths.some((path) => contains(path, ['grace', 'reconnect']) && path.state.context.phase === 'serving')).toBe(true);
    // Superseded while awaiting and while serving.
    const supersededIn = (phase: string) => paths.some((path) => path.steps.some((s, i) => s.event.type === 'supersede' && (i === 0 ? INITIAL : path.steps[i - 1]!.state.context).phase === phase));
    expect(supersededIn('generating')).toBe(true);
    expect(supersededIn('serving')).toBe(true);
    // A catch-up that fails, and one that succeeds after it.
    expect(paths.some((path) => path.steps.some((s) => s.event.type === 'reconnect' && s.state.context.phase === 'store-unreadable'))).toBe(true);
    expect(paths.some((path) => contains(path, ['storeUp', 'tick']) && path.steps.some((s) => s.state.context.phase === 'store-unreadable'))).toBe(true);
    expect(paths.some((path) => path.steps.some((s, i) => s.event.type === 'delete' && i > 0 && path.steps[i - 1]!.state.context.phase === 'serving'))).toBe(true);
    expect(paths.some((path) => path.state.context.phase === 'stopped')).toBe(true);
  });
});

const PROTOCOLS = ['sotw', 'delta'] as const;

describe.each(PROTOCOLS.flatMap((protocol) => paths.map((path) => [protocol, named(path), path] as const)))('replayed over %s: %s', (protocol, _name, path) => {
  let replay: ModelReplay;
  beforeAll(async () => {
    replay = await ModelReplay.start(protocol);
  });
  afterAll(() => replay.close());

  it('rests where the model says after each step, the client holding the store’s configuration, no invariant broken', async () => {
    let before: ModelState = INITIAL;
    for (const [index, { event, state }] of path.steps.entries()) {
      const where = `step ${index + 1} (${event.type}) of ${named(path)}`;
      await replay.step(event, before, state.context, where);
      before = state.context;
    }
  });
});
