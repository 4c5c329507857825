import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { ModelReplay, sinksStillHeld } from './model-replay.js';
import { eventsFor, generatedPaths, INITIAL, modelPaths, SCENARIOS, step, type ModelEvent, type ModelPath, type ModelState } from './session-model.js';

/**
 * Model-based: paths through a reference model of a session (session-model.ts, written apart
 * from the server's chart) are replayed against a real control plane made by
 * `createControlPlane`, with an Envoy-like client that names the versions it holds and ACKs
 * every response. After every step the server must rest where the model says, the client must
 * hold what the generator makes of the store, and no invariant may break (model-replay.ts): an
 * earlier stream's late requests change nothing (I4), and an evicted session leaves no entry in
 * any table, no timer, feed listener or metric series, and no stream sink (I3). After three
 * failed paths the rest are skipped, so a broken chart fails in seconds.
 */

const paths = modelPaths();
const generated = generatedPaths();

/**
 * Paths replayed after this many have failed are skipped: one broken transition fails every
 * path through it, each after waiting out a settle, and the first failures say what broke.
 */
const MAX_FAILURES = 3;
let failures = 0;

/** Every replay, stopped, kept until the last test looks at what its sessions still hold. */
const replays: Array<{ readonly name: string; readonly replay: ModelReplay }> = [];

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

  it('are generated, not only chosen by hand, for a missed change then a reconnect, a catch-up retried on a tick, and an earlier stream’s late words', () => {
    const stale = (path: ModelPath) => path.steps.some((s, i) => s.event.type === 'reconnect' && i > 0 && path.steps[i - 1]!.state.context.stale);
    expect(generated.some((path) => stale(path) && contains(path, ['close', 'write', 'reconnect']))).toBe(true);
    expect(generated.some((path) => stale(path) && path.state.context.phase === 'serving')).toBe(true);
    const retried = (path: ModelPath) =>
      path.steps.some((s, i) => s.event.type === 'tick' && i > 0 && path.steps[i - 1]!.state.context.phase === 'store-unreadable' && s.state.context.phase === 'serving');
    expect(generated.some(retried)).toBe(true);
    const lateIn = (phase: string) => generated.some((path) => path.steps.some((s, i) => (s.event.type === 'late' || s.event.type === 'supersede') && i > 0 && path.steps[i - 1]!.state.context.phase === phase));
    expect(['generating', 'store-unreadable', 'serving'].filter(lateIn)).toEqual(['generating', 'store-unreadable', 'serving']);
  });

  it('reach every phase, go deep, and cover what the chart must get right', () => {
    expect(new Set(paths.map((path) => path.state.context.phase))).toEqual(
      new Set(['none', 'generating', 'store-unreadable', 'serving', 'disconnected', 'evicted', 'stopped']),
    );
    expect(Math.max(...generated.map((path) => path.steps.length))).toBeGreaterThanOrEqual(8);
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
  let replay: ModelReplay | undefined;
  beforeAll(async () => {
    if (failures >= MAX_FAILURES) return;
    replay = await ModelReplay.start(protocol);
    replays.push({ name: `${protocol}: ${named(path)}`, replay });
  });
  afterAll(() => replay?.close());

  it('rests where the model says after each step, the client holding the store’s configuration, no invariant broken', async ({ skip }) => {
    if (replay === undefined) return skip(`${MAX_FAILURES} paths failed already: the first failures say what broke`);
    onTestFailed(() => {
      failures += 1;
    });
    let before: ModelState = INITIAL;
    for (const [index, { event, state }] of path.steps.entries()) {
      const where = `step ${index + 1} (${event.type}) of ${named(path)}`;
      await replay.step(event, before, state.context, where);
      before = state.context;
    }
  });
});

describe('after every path was replayed', () => {
  it('the sessions hold no stream sink: every one was let go when its stream ended or its session was evicted (I3)', async () => {
    expect(replays.length).toBeGreaterThan(0);
    expect(await sinksStillHeld(replays)).toEqual([]);
    replays.length = 0;
  });
});
