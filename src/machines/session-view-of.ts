import type { SnapshotFrom } from 'xstate';
import type { SessionMachine } from './session-machine.js';
import type { SessionState, SessionView, TransitionRecord } from './session-view.js';

/** Builds the API's view of a session from its actor snapshot. */
export function viewOf(
  snapshot: SnapshotFrom<SessionMachine>,
  instance: string,
  transitions: readonly TransitionRecord[],
): SessionView {
  const { context } = snapshot;
  const { phase } = context;
  const state = snapshot.value as SessionState;
  const stream =
    phase.state === 'awaiting-snapshot' || phase.state === 'serving'
      ? phase.stream
      : phase.state === 'disconnected'
        ? phase.lastStream
        : undefined;
  const types =
    phase.state === 'awaiting-snapshot' || phase.state === 'serving'
      ? phase.ledger.status()
      : phase.state === 'disconnected'
        ? phase.types
        : {};
  return {
    node: context.node,
    state,
    instance,
    ...(stream && { stream: { id: stream.id, peer: stream.peer, openedAt: new Date(stream.openedAt).toISOString() } }),
    ...(phase.state === 'serving' && { revision: phase.snapshot.revision }),
    ...(context.error && { error: { code: context.error.code, message: context.error.message } }),
    types,
    transitions,
  };
}
