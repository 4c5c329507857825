import { Subject, type Observable } from 'rxjs';
import type { SessionView } from '../machines/index.js';
import type { RequestKind } from '../xds/index.js';
import type { SessionCallbacks } from './session-callbacks.js';

/** Told of a session that changed: with its view when its state changed or it recorded a NACK, with its node alone when only its status did. */
export type SessionListener = (node: string, view?: SessionView) => void;

/**
 * Sessions changing, for those who watch them: the library's `sessions` observable and the
 * API's live feed. Views are built only while someone watches, and only for changes of state
 * and NACKs: a push or an ACK tells the node alone (one view per push would cost 10,000
 * views a change), and a listener reads the view when it needs it.
 */
export class SessionWatch implements SessionCallbacks {
  readonly #subject = new Subject<SessionView>();
  readonly #listeners = new Set<SessionListener>();

  /** Each session's view whenever it changes state or records a NACK. */
  readonly views: Observable<SessionView> = this.#subject.asObservable();

  /** Adds a listener; returns its removal. */
  watch(listener: SessionListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  onTransition(node: string, _record: unknown, view: () => SessionView): void {
    this.#changed(node, view);
  }

  onNack(node: string, _record: unknown, view: () => SessionView): void {
    this.#changed(node, view);
  }

  onRequest(node: string, kind: RequestKind): void {
    if (kind === 'ack') this.#touched(node);
  }

  onResponse(node: string): void {
    this.#touched(node);
  }

  #changed(node: string, viewOf: () => SessionView): void {
    if (!this.#subject.observed && this.#listeners.size === 0) return;
    const view = viewOf();
    if (this.#subject.observed) this.#subject.next(view);
    for (const listener of this.#listeners) listener(node, view);
  }

  #touched(node: string): void {
    for (const listener of this.#listeners) listener(node);
  }
}
