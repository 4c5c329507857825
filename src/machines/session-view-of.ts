import type { SnapshotFrom } from 'xstate';
import { isoTime } from '../common/index.js';
import { inboundAcceptance, tlsFactsOf } from '../mesh/index.js';
import { LISTENER, type Ledger, type Snapshot, type StreamAuthentication } from '../xds/index.js';
import type { SessionMachine } from './session-machine.js';
import { sessionStateOf, stateIdOf } from './session-states.js';
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
    ...(stream && {
      stream: {
        id: stream.id,
        peer: stream.peer,
        openedAt: isoTime(stream.openedAt),
        protocol: stream.protocol,
        authentication: authenticationView(stream.authentication),
      },
    }),
    ...(phase.state === 'serving' && { revision: phase.snapshot.revision }),
    ...(context.error && { error: { code: context.error.code, message: context.error.message } }),
    ...(context.certificate && {
      certificate: {
        spiffeIds: context.certificate.spiffeIds,
        serial: context.certificate.serial,
        issuer: context.certificate.issuer,
        notAfter: isoTime(context.certificate.notAfter),
        renewAt: isoTime(context.certificate.renewAt),
      },
    }),
    ...(context.certificateError !== undefined && { certificateError: context.certificateError }),
    ...(phase.state === 'serving' && inboundView(phase.snapshot, phase.ledger)),
    types,
    transitions,
  };
}

/** What the node's inbound accepts of mTLS, in a mesh that has it; nothing for a node that serves nothing (a pure client). */
function inboundView(snapshot: Snapshot, ledger: Ledger): Pick<SessionView, 'inbound'> | undefined {
  const facts = tlsFactsOf(snapshot);
  if (facts === undefined || !facts.serves) return undefined;
  const { inbound, reason } = inboundAcceptance(facts, ledger.report(LISTENER)?.subscription);
  return { inbound: { accepts: inbound, ...(reason !== undefined && { reason }) } };
}

function authenticationView(authentication: StreamAuthentication): NonNullable<SessionView['stream']>['authentication'] {
  return authentication.by === 'none' ? authentication : { ...authentication, expiresAt: isoTime(authentication.expiresAt) };
}
