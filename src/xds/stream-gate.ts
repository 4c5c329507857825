import { clip } from '../common/index.js';
import { expiredRefusal, type Admission, type Refusal, type StreamAdmission, type StreamAuthentication } from './stream-admission.js';
import type { EndStatus } from './stream-writer.js';
import type { Protocol, TypedRequest } from './stream/index.js';

/** The most characters of a changed node id a refusal quotes: a valid one has at most 127. */
const NODE_ID_QUOTED = 128;

/** The longest delay Node's `setTimeout` keeps; past it, the timer fires after 1 ms. */
const MAX_TIMER_DELAY = 2 ** 31 - 1;

/** The part of XState's clock expiry timers use, so a `SimulatedClock` can drive them. */
export interface ExpiryClock {
  setTimeout(fn: () => void, timeout: number): unknown;
  clearTimeout(id: unknown): void;
}

/** What a gate tells the stream it guards. */
export interface GateOutcomes {
  /** The node was admitted: the session may be told of the stream, with its first request. */
  admitted(node: string, authentication: StreamAuthentication, first: TypedRequest): void;
  /** A later request of the admitted node. */
  request(node: string, request: TypedRequest): void;
  /** The stream must end for who it claimed to be; nothing is sent before this. */
  refused(node: string, refusal: Refusal): void;
  /** The stream must end for what it sent. */
  invalid(status: EndStatus, reason: string): void;
}

export interface StreamGateOptions {
  readonly admission: StreamAdmission;
  readonly protocol: Protocol;
  readonly clock: ExpiryClock;
  readonly now: () => number;
  /** The stream's `authorization` metadata, read when it opened. */
  readonly authorization: string | undefined;
  readonly outcomes: GateOutcomes;
}

/**
 * One stream's way to its session (DESIGN §10): its first request claims a node, which the
 * admission admits or refuses before anything is sent; requests that arrive meanwhile wait, in
 * order. Once admitted, the stream speaks for that node only, and ends when its token expires
 * or a recheck no longer admits it.
 */
export class StreamGate {
  readonly #options: StreamGateOptions;
  #phase: { readonly kind: 'unclaimed' } | { readonly kind: 'deciding'; readonly node: string; readonly waiting: TypedRequest[] } | Admitted | { readonly kind: 'shut' } = {
    kind: 'unclaimed',
  };
  #expiry: unknown;

  constructor(options: StreamGateOptions) {
    this.#options = options;
  }

  /** The node the stream claimed or was admitted as; undefined before its first request. */
  get node(): string | undefined {
    return 'node' in this.#phase ? this.#phase.node : undefined;
  }

  /** Whether the node was admitted and the gate is still open. */
  get admitted(): boolean {
    return this.#phase.kind === 'admitted';
  }

  receive(request: TypedRequest): void {
    const phase = this.#phase;
    switch (phase.kind) {
      case 'admitted':
        return this.#forward(phase.node, request);
      case 'deciding':
        phase.waiting.push(request);
        return;
      case 'shut':
        return;
      case 'unclaimed':
        return this.#claim(request);
    }
  }

  /** Asks the admission again, after credentials changed; refuses a stream it no longer admits. */
  recheck(): void {
    const phase = this.#phase;
    if (phase.kind !== 'admitted') return;
    const refusal = this.#options.admission.recheck(phase.node, phase.authentication);
    if (refusal !== undefined) this.#refuse(phase.node, refusal);
  }

  /** The stream ended: nothing more passes, and the expiry timer is cleared. */
  shut(): void {
    if (this.#expiry !== undefined) this.#options.clock.clearTimeout(this.#expiry);
    this.#expiry = undefined;
    this.#phase = { kind: 'shut' };
  }

  #claim(first: TypedRequest): void {
    const { admission, authorization, protocol, outcomes } = this.#options;
    // xDS: only the first request on a stream is guaranteed to carry the node.
    const node = first.nodeId;
    if (node === undefined) {
      this.shut();
      const message = `the first ${protocol === 'delta' ? 'DeltaDiscoveryRequest' : 'DiscoveryRequest'} on a stream must carry node.id (<mesh>.<name>)`;
      return outcomes.invalid({ code: 'INVALID_ARGUMENT', message }, 'no node id');
    }
    const decided = admission.admit(node, authorization);
    if (!(decided instanceof Promise)) return this.#decide(node, first, decided, []);
    const waiting: TypedRequest[] = [];
    this.#phase = { kind: 'deciding', node, waiting };
    decided.then(
      (decision) => this.#decide(node, first, decision, waiting),
      () => this.#refuse(node, { code: 'UNAUTHENTICATED', reason: 'token-invalid', message: 'the token could not be checked' }),
    );
  }

  #decide(node: string, first: TypedRequest, decision: Admission, waiting: readonly TypedRequest[]): void {
    if (this.#phase.kind === 'shut') return;
    if (!decision.ok) return this.#refuse(node, decision.refusal);
    const { authentication } = decision;
    // A decision that took a while is checked again: a key may have gone meanwhile.
    const refusal = this.#options.admission.recheck(node, authentication);
    if (refusal !== undefined) return this.#refuse(node, refusal);
    this.#phase = { kind: 'admitted', node, authentication };
    if (authentication.by !== 'none') this.#armExpiry(node, authentication.expiresAt);
    this.#options.outcomes.admitted(node, authentication, first);
    for (const later of waiting) this.receive(later);
  }

  /**
   * Ends the stream at `expiresAt`. Node fires a timer at once when its delay is past 2^31−1 ms
   * (about 24.8 days), so a later expiry is waited for in steps of at most that, each re-armed
   * on the clock until the real expiry is within reach.
   */
  #armExpiry(node: string, expiresAt: number): void {
    if (this.#phase.kind === 'shut') return;
    const { clock, now } = this.#options;
    const remaining = expiresAt - now();
    this.#expiry =
      remaining > MAX_TIMER_DELAY
        ? clock.setTimeout(() => this.#armExpiry(node, expiresAt), MAX_TIMER_DELAY)
        : clock.setTimeout(() => this.#refuse(node, expiredRefusal(expiresAt)), Math.max(0, remaining));
  }

  #forward(node: string, request: TypedRequest): void {
    if (request.nodeId !== undefined && request.nodeId !== node) {
      // Kuma's rule: a stream speaks for one node, the one it was admitted as.
      // A later request's node id is not checked against the limits: quote it cut short (issue 11).
      const sent = clip(request.nodeId, NODE_ID_QUOTED);
      return this.#refuse(node, { code: 'PERMISSION_DENIED', reason: 'node-changed', message: `node id cannot change on a stream: it opened as ${node}, then sent ${sent}` });
    }
    this.#options.outcomes.request(node, request);
  }

  #refuse(node: string, refusal: Refusal): void {
    if (this.#phase.kind === 'shut') return;
    this.shut();
    this.#options.outcomes.refused(node, refusal);
  }
}

interface Admitted {
  readonly kind: 'admitted';
  readonly node: string;
  readonly authentication: StreamAuthentication;
}
