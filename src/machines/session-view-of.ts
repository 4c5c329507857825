import type { SnapshotFrom } from 'xstate';
import { isoTime } from '../iso-time.js';
import type { StreamAuthentication } from '../xds/index.js';
import type { SessionMachine } from './session-machine.js';
import { sessionStateOf, stateIdOf } from './session-states.js';
import type { StreamInfo } from './session-events.js';
import type { SessionView, TransitionRecord } from './session-view.js';

/** Builds the API's view of a session from its actor snapshot. */
export function viewOf(
  snapshot: SnapshotFrom<SessionMachine>,
  instance: string,
  transitions: readonly TransitionRecord[],
): SessionView {
  const { context } = snapshot;
  const { phase } = context;
  const id = stateIdOf(snapshot.value);
  const state = sessionStateOf(id);
  const stream = 'stream' in phase ? phase.stream : phase.state === 'disconnected' ? phase.lastStream : undefined;
  const types = 'ledger' in phase ? phase.ledger.status() : phase.state === 'disconnected' ? phase.types : {};
  return {
    node: context.node,
    state,
    ...(id !== state && { step: id }),
    instance,
    ...(stream && { stream: streamView(stream) }),
    ...(phase.state === 'serving' && { revision: phase.snapshot.revision }),
    ...(context.error && { error: { code: context.error.code, message: context.error.message } }),
    types,
    transitions,
  };
}

/**
 * A stream as views show it, made once per stream and shared by the views made from it, so
 * frozen: the session records build a view of every node that moved each second.
 */
const streamViews = new WeakMap<StreamInfo, NonNullable<SessionView['stream']>>();

function streamView(stream: StreamInfo): NonNullable<SessionView['stream']> {
  let view = streamViews.get(stream);
  if (view === undefined) {
    view = Object.freeze({
      id: stream.id,
      peer: stream.peer,
      openedAt: isoTime(stream.openedAt),
      protocol: stream.protocol,
      authentication: Object.freeze(authenticationView(stream.authentication)),
    });
    streamViews.set(stream, view);
  }
  return view;
}

function authenticationView(authentication: StreamAuthentication): NonNullable<SessionView['stream']>['authentication'] {
  return authentication.by === 'none' ? authentication : { ...authentication, expiresAt: isoTime(authentication.expiresAt) };
}
