import type { InspectionEvent, Observer } from 'xstate';
import type { SessionView, TransitionRecord } from '../machines/index.js';
import type { RequestKind, TypeUrl, XdsResponse } from '../xds/index.js';

/**
 * What the session runtime tells as it goes, as go-control-plane's `Callbacks` do: each call is
 * synchronous and must be cheap (metrics, marking a record dirty, queueing a live update). Every
 * member is optional; `combineCallbacks` makes one out of several.
 */
export interface SessionCallbacks {
  /** A session entered another state of the chart: the step its story records; `view` builds its view, if wanted. */
  onTransition?(node: string, record: TransitionRecord, view: () => SessionView): void;
  /** The client refused a response: the step its story records (its state did not change). */
  onNack?(node: string, record: TransitionRecord, view: () => SessionView): void;
  /** A request arrived on a session's current stream after its first; requests on superseded streams are not told. */
  onRequest?(node: string, kind: RequestKind, typeUrl: TypeUrl): void;
  /** A response of `bytes` bytes was written to a session's stream. */
  onResponse?(node: string, response: XdsResponse, bytes: number): void;
  /** An observer to attach to the node's actor (live inspection), asked once as its session is created. */
  inspect?(node: string): Observer<InspectionEvent> | undefined;
}

const TOLD = ['onTransition', 'onNack', 'onRequest', 'onResponse'] as const;

/** One set of callbacks that calls each of `parts` in turn; the first inspector offered wins. */
export function combineCallbacks(...parts: readonly SessionCallbacks[]): SessionCallbacks {
  const combined: Record<string, (...args: never[]) => void> = {};
  for (const name of TOLD) {
    const handlers = parts.map((part) => part[name]?.bind(part)).filter((handler) => handler !== undefined) as Array<(...args: unknown[]) => void>;
    if (handlers.length === 0) continue;
    // Three arguments at most, passed as they are: a rest parameter would make an array per call, four calls a request.
    combined[name] = (first: unknown, second: unknown, third: unknown) => {
      for (const handler of handlers) handler(first, second, third);
    };
  }
  const inspectors = parts.filter((part) => part.inspect !== undefined);
  return {
    ...(combined as SessionCallbacks),
    ...(inspectors.length > 0 && { inspect: (node: string) => inspectors.map((part) => part.inspect!(node)).find((found) => found !== undefined) }),
  };
}
