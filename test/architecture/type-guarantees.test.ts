import { describe, expect, it } from 'vitest';
import { sessionSetup, type Phase, type SessionState } from '../../src/machines/index.js';
import type { Snapshot } from '../../src/xds/snapshot.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../src/xds/type-urls.js';
import { ResourceSet } from '../../src/xds/resource-set.js';

// These tests are checked by `tsc --noEmit` (part of `npm test`): each `@ts-expect-error`
// fails the build if the line below it ever becomes legal.
describe('I1 no empty push, at the type level', () => {
  it('does not let a Snapshot be written by hand', () => {
    const type = { version: '', wildcard: ResourceSet.empty, named: [], size: 0, get: () => undefined };
    const handMade = {
      node: 'default.x',
      revision: 1,
      resourceCount: 0,
      types: { [CLUSTER]: type, [ENDPOINT]: type, [LISTENER]: type, [ROUTE]: type },
    };
    // @ts-expect-error only sealSnapshot can make a Snapshot: it carries a brand nothing else can write
    const snapshot: Snapshot = handMade;
    expect(snapshot).toBeDefined();
  });

  it('does not let the chart push without a snapshot', () => {
    const machine = sessionSetup.createMachine({
      context: ({ input }) => ({ node: input.node, evictionGrace: input.evictionGrace, phase: { state: 'connecting' }, attempted: 0 }),
      initial: 'waiting',
      states: {
        waiting: {
          on: {
            // @ts-expect-error `push` requires { snapshot }: a bare push names nothing to send
            'store.advanced': { actions: 'push' },
          },
        },
      },
    });
    expect(machine.id).toBeDefined();
  });
});

/** `true` only when A and B are the same set of names. */
type SameNames<A extends string, B extends string> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

describe('the session chart and its context, at the type level', () => {
  it('gives every state of the chart a phase of the context, and no phase to a state the chart lacks', () => {
    const same: SameNames<Phase['state'], SessionState> = true;
    // @ts-expect-error a state name the chart does not have is not a SessionState
    const unknown: SessionState = 'streaming';
    expect([same, unknown]).toHaveLength(2);
  });
});
