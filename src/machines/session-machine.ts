import { assertEvent, assign, emit, enqueueActions, setup } from 'xstate';
import { excerpt } from '../common/index.js';
import { parseNodeId } from '../mesh/index.js';
import { openLedger, type Snapshot } from '../xds/index.js';
import { isBehind, servedSnapshot, streamPhase, type SessionContext, type SessionInput } from './session-context.js';
import { answerIntents, pushIntents, type Effects } from './session-effects.js';
import { generationEvent, type EndStatus, type SessionEvent, type SessionIntent } from './session-events.js';
import { isDataplaneGone, needsCertificate } from './generation-failure.js';

/** The part of `enqueueActions`' `enqueue` a step needs. */
interface Enqueue {
  assign(values: Partial<SessionContext>): void;
  emit(intent: SessionIntent): void;
}

/** Serves `snapshot` and sends what the stream is owed from it, in one assignment: a change costs every node one context copy, not two. */
function serve(context: SessionContext, enqueue: Enqueue, snapshot: Snapshot, at: number): void {
  const { stream, ledger } = streamPhase(context);
  const { ledger: after, intents } = pushIntents(ledger, snapshot, at);
  enqueue.assign({ phase: { state: 'serving', stream, ledger: after, snapshot }, attempted: snapshot.revision, error: undefined });
  for (const intent of intents) enqueue.emit(intent);
}

/** Assigns the ledger after a step to the phase that holds it, then emits the step's intents, in order. */
function apply(context: SessionContext, enqueue: Enqueue, { ledger, intents }: Effects): void {
  const phase = streamPhase(context);
  if (ledger !== phase.ledger) enqueue.assign({ phase: { ...phase, ledger } });
  for (const intent of intents) enqueue.emit(intent);
}

/**
 * The session chart's implementations, by name. Exported for type tests that show what the
 * chart may not say (a bare `push`); build session behaviour from `sessionMachine`.
 */
export const sessionSetup = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as SessionInput,
    emitted: {} as SessionIntent,
  },
  actions: {
    adoptStream: assign(({ event, context }) => {
      assertEvent(event, 'stream.opened');
      const { ledger } = openLedger(event.stream.protocol, event.stream.id).receive(event.request, event.at);
      return { phase: { state: 'awaiting-snapshot' as const, stream: event.stream, ledger }, attempted: context.attempted };
    }),
    supersede: enqueueActions(({ context, enqueue }) => {
      // I4: the newer stream owns the node; the older one is ended and can no longer touch it.
      const message = `superseded by a newer stream from node ${context.node}`;
      enqueue.emit({ type: 'end', streamId: streamPhase(context).stream.id, status: { code: 'ABORTED', message } });
    }),
    refuseNode: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'stream.opened');
      const parsed = parseNodeId(context.node);
      // Every reason names the node id and the <mesh>.<name> rule it breaks.
      const message = parsed.ok ? `node id ${excerpt(context.node)} is invalid` : parsed.reason;
      enqueue.emit({ type: 'end', streamId: event.stream.id, status: { code: 'INVALID_ARGUMENT', message } });
    }),
    // Awaiting a snapshot: generated within the step of the event that calls for it, which carries
    // the means, the result raised as the event it is: a connect is one step, not a request and
    // its answer. (A failure moves nothing here; in `serving` one may, so it comes by itself.)
    generateSnapshot: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, ['stream.opened', 'store.caughtUp', 'store.advanced', 'watchdog.ticked', 'certificate.issued']);
      enqueue.raise(generationEvent(event.generate(context.node), event.at));
    }),
    catchUp: emit(({ context }) => ({ type: 'catchUp' as const, streamId: streamPhase(context).stream.id })),
    push: enqueueActions(({ context, event, enqueue }, params: { snapshot: Snapshot }) => serve(context, enqueue, params.snapshot, event.at)),
    // A serving node generates in the step that hears the store moved: one event per node per
    // change, not a request and its answer (bench/README.md). A failure is asked for again, so
    // that it arrives as its own event, which the story records with its reason.
    regenerate: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, ['store.advanced', 'watchdog.ticked', 'certificate.issued']);
      const generation = event.generate(context.node);
      if (generation.ok) serve(context, enqueue, generation.snapshot, event.at);
      else enqueue.emit({ type: 'generate' });
    }),
    answer: enqueueActions(({ context, event, enqueue }, params: { snapshot: Snapshot }) => {
      assertEvent(event, ['xds.requested', 'xds.acked', 'xds.nacked']);
      apply(context, enqueue, answerIntents(streamPhase(context).ledger, event.request, event.at, params.snapshot));
    }),
    record: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, ['xds.requested', 'xds.acked', 'xds.nacked']);
      apply(context, enqueue, answerIntents(streamPhase(context).ledger, event.request, event.at, undefined));
    }),
    requestCertificate: emit({ type: 'issueCertificate' }),
    recordCertificate: assign(({ event }) => {
      assertEvent(event, 'certificate.issued');
      return { certificate: event.certificate, certificateError: undefined };
    }),
    recordCertificateFailure: assign(({ event }) => {
      assertEvent(event, 'certificate.failed');
      return { certificateError: event.reason };
    }),
    recordFailure: assign(({ event }) => {
      assertEvent(event, 'snapshot.failed');
      return { attempted: event.revision, error: event.error };
    }),
    release: assign(({ event, context }) => {
      assertEvent(event, 'stream.closed');
      const { stream, ledger } = streamPhase(context);
      // Keep what the stream was sent as a record for inspection; nothing that could be pushed.
      return { phase: { state: 'disconnected' as const, since: event.at, lastStream: stream, types: ledger.status() } };
    }),
    endStream: enqueueActions(({ context, enqueue }, params: EndStatus) => {
      enqueue.emit({ type: 'end', streamId: streamPhase(context).stream.id, status: params });
    }),
    markEvicted: assign({ phase: { state: 'evicted' as const } }),
  },
  guards: {
    validNode: ({ context }) => parseNodeId(context.node).ok,
    currentStream: ({ context, event }) => {
      const { phase } = context;
      return 'streamId' in event && 'stream' in phase && event.streamId === phase.stream.id;
    },
    behind: ({ context, event }) => 'revision' in event && isBehind(context, event.revision),
    dataplaneGone: ({ event }) => event.type === 'snapshot.failed' && isDataplaneGone(event.error),
    certificateNeeded: ({ event }) => event.type === 'snapshot.failed' && needsCertificate(event.error),
    // The node says it holds configuration: it may come from an instance whose store was ahead.
    holdsConfiguration: ({ context }) => streamPhase(context).ledger.holdsConfiguration(),
  },
  delays: {
    evictionGrace: ({ context }) => context.evictionGrace,
  },
});

/**
 * The life of one dataplane's session (DESIGN.md section 4). One root actor per node; the
 * registry creates it on the first request of a stream and drops it when it is evicted.
 *
 * The only actions that send anything are `push` and `answer`, which require the Snapshot
 * being served as a parameter, and `regenerate`, which serves only what the generator returns,
 * in `serving` alone: there is no way to push from `connecting` or `awaiting-snapshot`, and no
 * snapshot to push from anywhere else (I1). `streaming` groups the two states that hold a
 * stream and keeps what happens to a stream in one place.
 */
export const sessionMachine = sessionSetup.createMachine({
  id: 'session',
  context: ({ input: { node, evictionGrace, certificate } }) => ({ node, evictionGrace, phase: { state: 'connecting' }, attempted: 0, ...(certificate && { certificate }) }),
  initial: 'connecting',
  states: {
    connecting: {
      id: 'connecting',
      on: {
        'stream.opened': [
          { guard: 'validNode', target: '#awaiting-snapshot', actions: 'adoptStream' },
          { target: '#evicted', actions: 'refuseNode' },
        ],
      },
    },
    streaming: {
      id: 'streaming',
      meta: { groups: 'the states that hold a stream' },
      initial: 'awaiting-snapshot',
      on: {
        'xds.requested': { guard: 'currentStream', actions: 'record' },
        'xds.acked': { guard: 'currentStream', actions: 'record' },
        'xds.nacked': { guard: 'currentStream', actions: 'record' },
        'stream.closed': { guard: 'currentStream', target: '#disconnected', actions: 'release' },
        'stream.opened': { target: '#awaiting-snapshot', reenter: true, actions: ['supersede', 'adoptStream'] },
        // Certificates (docs/mtls.md): issued at the edge, recorded here; a failure keeps what the node holds (I8).
        'certificate.issued': { actions: 'recordCertificate' },
        'certificate.failed': { actions: 'recordCertificateFailure' },
        'certificate.due': { actions: 'requestCertificate' },
        'shutdown.requested': {
          target: '#evicted',
          actions: { type: 'endStream', params: ({ event }) => ({ code: 'UNAVAILABLE', message: event.reason }) },
        },
      },
      states: {
        'awaiting-snapshot': {
          id: 'awaiting-snapshot',
          initial: 'arriving',
          on: {
            'snapshot.generated': {
              target: '#serving',
              actions: { type: 'push', params: ({ event }) => ({ snapshot: event.snapshot }) },
            },
            'snapshot.failed': [
              { guard: 'certificateNeeded', actions: ['recordFailure', 'requestCertificate'] },
              { actions: 'recordFailure' },
            ],
          },
          states: {
            arriving: {
              id: 'arriving',
              always: [{ guard: 'holdsConfiguration', target: '#catching-up' }, { target: '#generating' }],
            },
            // Never sent less than it holds: the store reads the log to its end before generating.
            'catching-up': {
              id: 'catching-up',
              entry: 'catchUp',
              on: {
                'store.caughtUp': { guard: 'currentStream', target: '#generating' },
                'store.catchUpFailed': { guard: 'currentStream', target: '#store-unreadable' },
                // It generates once caught up, from the newer projection.
                'store.advanced': {},
                'watchdog.ticked': {},
              },
            },
            'store-unreadable': {
              id: 'store-unreadable',
              tags: ['retries-on-tick'],
              on: {
                'watchdog.ticked': { target: '#catching-up' },
                'store.advanced': { target: '#catching-up' },
              },
            },
            // I2: generation starts on connect, not at the next watchdog tick.
            generating: {
              id: 'generating',
              // What it generated, taken within the step that entered it: a stream's opening is served in its own step.
              meta: { raises: ['snapshot.generated', 'snapshot.failed'] },
              entry: 'generateSnapshot',
              on: {
                // Generation waited (for the Dataplane, for the store): it goes again at a newer revision.
                'store.advanced': { guard: 'behind', target: '#generating', reenter: true },
                'watchdog.ticked': { guard: 'behind', target: '#generating', reenter: true },
                // Generation waited for the certificate: it goes again, now that the node has one.
                'certificate.issued': { target: '#generating', reenter: true, actions: 'recordCertificate' },
              },
            },
          },
        },
        serving: {
          id: 'serving',
          on: {
            'store.advanced': { guard: 'behind', actions: 'regenerate' },
            'watchdog.ticked': { guard: 'behind', actions: 'regenerate' },
            'snapshot.generated': { actions: { type: 'push', params: ({ event }) => ({ snapshot: event.snapshot }) } },
            'snapshot.failed': [
              {
                guard: 'dataplaneGone',
                target: '#evicted',
                actions: { type: 'endStream', params: ({ event }) => ({ code: 'NOT_FOUND', message: event.error.message }) },
              },
              // The node keeps what it holds meanwhile (I8).
              { guard: 'certificateNeeded', actions: ['recordFailure', 'requestCertificate'] },
              // Any other failure keeps the configuration the node has; it is shown, never pushed (I1).
              { actions: 'recordFailure' },
            ],
            // A renewal is a push of its new Secret (the Listeners and Clusters name it, unchanged).
            'certificate.issued': { actions: ['recordCertificate', 'regenerate'] },
            'xds.requested': { guard: 'currentStream', actions: { type: 'answer', params: ({ context }) => ({ snapshot: servedSnapshot(context) }) } },
            'xds.acked': { guard: 'currentStream', actions: { type: 'answer', params: ({ context }) => ({ snapshot: servedSnapshot(context) }) } },
            'xds.nacked': { guard: 'currentStream', actions: { type: 'answer', params: ({ context }) => ({ snapshot: servedSnapshot(context) }) } },
          },
        },
      },
    },
    disconnected: {
      id: 'disconnected',
      after: { evictionGrace: { target: '#evicted' } },
      on: {
        'stream.opened': { target: '#awaiting-snapshot', actions: 'adoptStream' },
        'shutdown.requested': { target: '#evicted' },
        // Renewed while away, so the node finds a valid certificate when it comes back within the grace (I8).
        'certificate.due': { actions: 'requestCertificate' },
        'certificate.issued': { actions: 'recordCertificate' },
        'certificate.failed': { actions: 'recordCertificateFailure' },
      },
    },
    evicted: {
      id: 'evicted',
      type: 'final',
      entry: 'markEvicted',
    },
  },
});

export type SessionMachine = typeof sessionMachine;
