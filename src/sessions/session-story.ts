import { REQUEST_EVENTS, type SessionEvent, type SessionStateId, type TransitionRecord } from '../machines/index.js';
import { isoTime, storableText } from '../common/index.js';
import type { Snapshot } from '../xds/index.js';
import { TransitionRing } from './transition-ring.js';

/** The most characters of a close reason a story keeps: a status message has at most 1,024. */
const MAX_REASON = 1_024;

/**
 * A session's story: its recent transitions, oldest first, each with the facts of the event
 * that caused it, as `GET /sessions/{node}/history` and the UI tell it.
 */
export class SessionStory {
  readonly #ring: TransitionRing;

  constructor(capacity: number) {
    this.#ring = new TransitionRing(capacity);
  }

  /**
   * Records a move between chart states, caused by `event`; returns the record. A move into
   * `serving` names what it served (`served`), whichever event it came by: a stream's opening
   * generates within its own step.
   */
  moved(at: number, event: { readonly type: string }, from: SessionStateId, to: SessionStateId, served?: Snapshot): TransitionRecord {
    const facts = detailOf(event as SessionEvent);
    const detail = served === undefined ? facts : { ...facts, revision: served.revision, resources: served.resourceCount };
    return this.#push({ at: isoTime(at), event: event.type, from, to, ...(detail && { detail }) });
  }

  /** Records a NACK: a step of the story in which the state did not change. */
  nacked(at: number, state: SessionStateId, detail: Readonly<Record<string, string | number>>): TransitionRecord {
    return this.#push({ at: isoTime(at), event: REQUEST_EVENTS.nack, from: state, to: state, detail });
  }

  toArray(): readonly TransitionRecord[] {
    return this.#ring.toArray();
  }

  #push(record: TransitionRecord): TransitionRecord {
    this.#ring.push(record);
    return record;
  }
}

function detailOf(event: SessionEvent): Record<string, string | number> | undefined {
  switch (event.type) {
    case 'stream.opened': {
      // A reconnecting node's first request names what it already holds: a version (SotW), resources (Delta).
      const { request, stream } = event;
      const detail: Record<string, string | number> = { stream: stream.id, peer: stream.peer, protocol: stream.protocol, typeUrl: request.typeUrl };
      if (request.protocol === 'sotw' && request.versionInfo !== '') detail['version'] = request.versionInfo;
      const held = request.protocol === 'delta' ? Object.keys(request.initialVersions).length : 0;
      if (held > 0) detail['holds'] = held;
      return detail;
    }
    case 'stream.closed':
      // The reason may quote what the client sent (a changed node id), and the story is saved with the session records.
      return { stream: event.streamId, reason: storableText(event.reason, MAX_REASON) };
    case 'snapshot.failed':
      return { revision: event.revision, code: event.error.code, message: event.error.message };
    case 'store.catchUpFailed':
      return { stream: event.streamId, reason: event.reason };
    case 'shutdown.requested':
      return { reason: event.reason };
    default:
      return undefined;
  }
}
