import { createWebSocketInspector } from '@statelyai/inspect';
import type { AnyEventObject, InspectionEvent, Observer, SnapshotFrom } from 'xstate';
import { viewOf, type SessionEvent, type SessionMachine } from '../machines/index.js';
import type { InspectOptions } from './inspect-options.js';

export interface SessionInspector {
  /** The observer to attach to `node`'s actor; undefined when the node is not chosen. */
  observerFor(node: string): Observer<InspectionEvent> | undefined;
  /** Closes the connection to the relay. */
  stop(): void;
}

type SessionSnapshot = SnapshotFrom<SessionMachine>;

/**
 * Connects to an inspector relay and sends the chosen sessions' actors, events and snapshots.
 * Each is translated here rather than handed to the inspector raw: a session's context holds
 * its Snapshot (every encoded resource), which the inspector would serialize on every step.
 * What is sent instead is the session's view (`GET /sessions/{node}`) and, for a generated
 * snapshot, its revision, size and versions.
 */
export function connectWebSocketInspector(options: InspectOptions, instance: string): SessionInspector {
  const inspector = createWebSocketInspector({ url: options.url });
  const inspected = (snapshot: SessionSnapshot) => ({
    status: snapshot.status,
    value: snapshot.value,
    context: viewOf(snapshot, instance, []),
  });
  const observe = (node: string, inspection: InspectionEvent) => {
    switch (inspection.type) {
      case '@xstate.actor':
        // Sent while the actor is being created, before its snapshot can be read: the node
        // names it until its first snapshot follows.
        inspector.actor(inspection.actorRef, { status: 'active', context: { node } });
        return;
      case '@xstate.event':
        inspector.event(inspection.actorRef, inspectedEvent(inspection.event));
        return;
      case '@xstate.snapshot':
        inspector.snapshot(inspection.actorRef, inspected(inspection.snapshot as SessionSnapshot), { event: inspectedEvent(inspection.event) });
        return;
    }
  };
  return {
    observerFor: (node) => (options.nodes(node) ? { next: (inspection) => observe(node, inspection) } : undefined),
    stop: () => inspector.stop(),
  };
}

/** The event as sent: a generated snapshot is named by its revision and versions, not its bytes; an event without the reader it carries (`generate`). */
export function inspectedEvent(event: AnyEventObject): AnyEventObject {
  const session = event as SessionEvent;
  if ('generate' in session) {
    const { generate: _reader, ...facts } = session;
    return facts;
  }
  if (session.type !== 'snapshot.generated') return event;
  const { node, revision, resourceCount, types } = session.snapshot;
  const versions = Object.fromEntries(Object.entries(types).map(([typeUrl, type]) => [typeUrl, type.version]));
  return { type: session.type, at: session.at, snapshot: { node, revision, resourceCount, versions } };
}
