import { describe, expect, it } from 'vitest';
import { encodeResource } from '../../../src/xds/encode.js';
import {
  openLedger,
  PROTOCOLS,
  requestKind,
  ResourceSet,
  sealSnapshot,
  type Ledger,
  type Protocol,
  type RequestOutcome,
  type Snapshot,
  type TypedRequest,
  type XdsResponse,
} from '../../../src/xds/index.js';
import { CLUSTER, ENDPOINT, FULL_STATE, LISTENER, ROUTE, SECRET, type TypeUrl } from '../../../src/xds/type-urls.js';

/**
 * The per-stream protocol state, rule by rule, as go-control-plane tests its `Subscription`: one
 * row per rule. Where SotW and Delta follow the same rule, one table runs against both ledgers;
 * the rows after it are each protocol's own.
 */

const cluster = (name: string, port = 1) =>
  encodeResource(CLUSTER, name, { name, type: 'EDS', eds_cluster_config: { service_name: name, eds_config: { ads: {} } }, connect_timeout: { seconds: port } }, [name]);
/** A cluster's endpoints: none, or one on `port`. */
const assignment = (name: string, port?: number) =>
  encodeResource(ENDPOINT, name, { cluster_name: name, endpoints: port === undefined ? [] : [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '10.0.0.1', port_value: port } } } }] }] });

/** A node's configuration: its clusters (wildcard), and the endpoints they name (`endpoints`: the port of a cluster's one endpoint). */
function snapshot(revision: number, clusters: readonly ReturnType<typeof cluster>[], endpoints: Readonly<Record<string, number>> = {}): Snapshot {
  const sealed = sealSnapshot({
    node: 'default.web-1',
    revision,
    types: {
      [CLUSTER]: { wildcard: new ResourceSet(clusters), named: [] },
      [ENDPOINT]: { wildcard: ResourceSet.empty, named: [new ResourceSet(clusters.map((c) => assignment(c.name, endpoints[c.name])))] },
      [LISTENER]: { wildcard: ResourceSet.empty, named: [] },
      [ROUTE]: { wildcard: ResourceSet.empty, named: [] },
      [SECRET]: { wildcard: ResourceSet.empty, named: [] },
    },
  });
  if (!sealed.ok) throw sealed.error;
  return sealed.snapshot;
}

const A = snapshot(1, [cluster('a'), cluster('b')]);
const A_CHANGED = snapshot(2, [cluster('a', 2), cluster('b')]);

/** How a client of one protocol words each request, so one row reads the same for both. */
interface Client {
  readonly protocol: Protocol;
  /** A type's first request on the stream: every resource of a wildcard type, or these names. */
  subscribe(typeUrl: TypeUrl, names?: readonly string[]): TypedRequest;
  /** The ACK of `response`. */
  ack(response: XdsResponse): TypedRequest;
  /** The NACK of `response`: `error_detail` with the response's nonce. */
  nack(response: XdsResponse, message: string): TypedRequest;
  /** A request that carries `error_detail` but answers no response (no nonce). */
  detailWithoutNonce(typeUrl: TypeUrl): TypedRequest;
  /** An answer to a nonce this stream never sent (or sent before the last). */
  answerTo(typeUrl: TypeUrl, nonce: string): TypedRequest;
}

/** The names a SotW client subscribed to, as the response it answers shows them: none for a wildcard type. */
const subscribedIn = (response: XdsResponse): string[] => (FULL_STATE.has(response.typeUrl) ? [] : response.resources.map((resource) => resource.name));

const CLIENTS: Readonly<Record<Protocol, Client>> = {
  sotw: {
    protocol: 'sotw',
    subscribe: (typeUrl, names = []) => ({ protocol: 'sotw', typeUrl, versionInfo: '', resourceNames: names, responseNonce: '' }),
    // A SotW request always carries the whole subscription: the names it was sent, for a named type.
    ack: (response) => ({ protocol: 'sotw', typeUrl: response.typeUrl, versionInfo: response.version, resourceNames: subscribedIn(response), responseNonce: response.nonce }),
    nack: (response, message) => ({
      protocol: 'sotw',
      typeUrl: response.typeUrl,
      versionInfo: '',
      resourceNames: subscribedIn(response),
      responseNonce: response.nonce,
      errorDetail: { code: 3, message },
    }),
    detailWithoutNonce: (typeUrl) => ({ protocol: 'sotw', typeUrl, versionInfo: '', resourceNames: [], responseNonce: '', errorDetail: { code: 3, message: 'no nonce' } }),
    answerTo: (typeUrl, nonce) => ({ protocol: 'sotw', typeUrl, versionInfo: 'v', resourceNames: [], responseNonce: nonce }),
  },
  delta: {
    protocol: 'delta',
    subscribe: (typeUrl, names = []) => ({ protocol: 'delta', typeUrl, subscribe: names, unsubscribe: [], initialVersions: {}, responseNonce: '' }),
    ack: (response) => ({ protocol: 'delta', typeUrl: response.typeUrl, subscribe: [], unsubscribe: [], initialVersions: {}, responseNonce: response.nonce }),
    nack: (response, message) => ({
      protocol: 'delta',
      typeUrl: response.typeUrl,
      subscribe: [],
      unsubscribe: [],
      initialVersions: {},
      responseNonce: response.nonce,
      errorDetail: { code: 3, message },
    }),
    detailWithoutNonce: (typeUrl) => ({ protocol: 'delta', typeUrl, subscribe: [], unsubscribe: [], initialVersions: {}, responseNonce: '', errorDetail: { code: 3, message: 'no nonce' } }),
    answerTo: (typeUrl, nonce) => ({ protocol: 'delta', typeUrl, subscribe: [], unsubscribe: [], initialVersions: {}, responseNonce: nonce }),
  },
};

/** A stream's ledger driven step by step, keeping the ledger each step returns. */
class Stream {
  ledger: Ledger;
  constructor(protocol: Protocol) {
    this.ledger = openLedger(protocol, 'stream-1');
  }
  receive(request: TypedRequest): RequestOutcome {
    const { ledger, outcome } = this.ledger.receive(request, 0);
    this.ledger = ledger;
    return outcome;
  }
  respond(typeUrl: TypeUrl, from: Snapshot, resend?: ReadonlySet<string>): XdsResponse | undefined {
    const { ledger, response } = this.ledger.respond(typeUrl, from, 0, resend);
    this.ledger = ledger;
    return response;
  }
  /** Subscribes to CDS and takes the first response. */
  served(client: Client, from = A): XdsResponse {
    this.receive(client.subscribe(CLUSTER));
    const response = this.respond(CLUSTER, from);
    if (response === undefined) throw new Error('the first CDS request was not answered');
    return response;
  }
}

const names = (response: XdsResponse | undefined) => response?.resources.map((resource) => resource.name);

interface Rule {
  readonly rule: string;
  readonly check: (client: Client, stream: Stream) => void;
}

/** The rules SotW and Delta share: one row each, run against both ledgers. */
const SHARED: readonly Rule[] = [
  {
    rule: 'a first request is a request, owed every resource the subscription selects',
    check: (client, stream) => {
      expect(stream.receive(client.subscribe(CLUSTER))).toEqual({ kind: 'request' });
      expect(names(stream.respond(CLUSTER, A))).toEqual(['a', 'b']);
    },
  },
  {
    rule: 'an answer to the last nonce without error_detail is an ACK of what that response carried',
    check: (client, stream) => {
      const sent = stream.served(client);
      expect(stream.ledger.acknowledged()).toBe(false);
      expect(stream.receive(client.ack(sent))).toEqual({ kind: 'ack', version: sent.version, nonce: sent.nonce });
      expect(stream.ledger.report(CLUSTER)?.acked).toMatchObject({ version: sent.version, nonce: sent.nonce });
      expect(stream.ledger.nacking()).toBe(false);
      expect(stream.ledger.acknowledged()).toBe(true);
    },
  },
  {
    rule: 'an answer to the last nonce with error_detail is a NACK of the version sent with it',
    check: (client, stream) => {
      const sent = stream.served(client);
      expect(stream.receive(client.nack(sent, 'bad cluster'))).toEqual({ kind: 'nack', version: sent.version, nonce: sent.nonce, message: 'bad cluster' });
      expect(stream.ledger.report(CLUSTER)?.nacked).toMatchObject({ version: sent.version, message: 'bad cluster' });
      expect(stream.ledger.nacking()).toBe(true);
      expect(stream.ledger.acknowledged()).toBe(false);
    },
  },
  {
    rule: 'error_detail without a response nonce answers nothing: it is a request, as requestKind says',
    check: (client, stream) => {
      stream.served(client);
      const request = client.detailWithoutNonce(CLUSTER);
      expect(requestKind(request)).toBe('request');
      expect(stream.receive(request)).toEqual({ kind: 'request' });
      expect(stream.ledger.nacking()).toBe(false);
    },
  },
  {
    rule: 'a nonce before anything was sent is a request',
    check: (client, stream) => {
      expect(stream.receive(client.answerTo(CLUSTER, '7'))).toEqual({ kind: 'request' });
    },
  },
  {
    rule: 'an ACKed response is not sent again while the configuration is unchanged',
    check: (client, stream) => {
      const sent = stream.served(client);
      stream.receive(client.ack(sent));
      expect(stream.respond(CLUSTER, A)).toBeUndefined();
    },
  },
  {
    rule: 'a NACKed version is not sent again (no NACK loop); a new version is',
    check: (client, stream) => {
      const sent = stream.served(client);
      stream.receive(client.nack(sent, 'bad cluster'));
      expect(stream.respond(CLUSTER, A)).toBeUndefined();
      const next = stream.respond(CLUSTER, A_CHANGED);
      expect(next?.version).not.toBe(sent.version);
      expect(names(next)).toContain('a');
    },
  },
  {
    rule: 'each response has a new nonce, unique on the stream',
    check: (client, stream) => {
      const first = stream.served(client);
      stream.receive(client.ack(first));
      const second = stream.respond(CLUSTER, A_CHANGED);
      expect(second?.nonce).toBeDefined();
      expect(second?.nonce).not.toBe(first.nonce);
    },
  },
  {
    rule: 'nothing is owed of a type the client has not asked for',
    check: (client, stream) => {
      stream.served(client);
      expect(stream.respond(LISTENER, A)).toBeUndefined();
      expect(stream.respond(ENDPOINT, A)).toBeUndefined();
    },
  },
  {
    rule: 'the types asked for are listed in push order, CDS, EDS, LDS, RDS, whatever order they came in (I5)',
    check: (client, stream) => {
      stream.receive(client.subscribe(LISTENER));
      stream.receive(client.subscribe(ENDPOINT, ['a']));
      stream.receive(client.subscribe(CLUSTER));
      expect(stream.ledger.requestedTypes()).toEqual([CLUSTER, ENDPOINT, LISTENER]);
    },
  },
  {
    rule: 'a named resource is sent again when asked to resend it, at an unchanged version (a warming cluster’s EDS, I5)',
    check: (client, stream) => {
      stream.receive(client.subscribe(ENDPOINT, ['a']));
      const sent = stream.respond(ENDPOINT, A);
      expect(names(sent)).toEqual(['a']);
      stream.receive(client.ack(sent!));
      expect(stream.respond(ENDPOINT, A)).toBeUndefined();
      expect(names(stream.respond(ENDPOINT, A, new Set(['a'])))).toEqual(['a']);
    },
  },
  {
    rule: 'a stream that holds nothing from before does not claim to hold configuration',
    check: (client, stream) => {
      stream.receive(client.subscribe(CLUSTER));
      expect(stream.ledger.holdsConfiguration()).toBe(false);
    },
  },
];

describe.each(PROTOCOLS)('the %s ledger, by the rules both protocols share', (protocol) => {
  it.each(SHARED)('$rule', ({ check }) => check(CLIENTS[protocol], new Stream(protocol)));
});

describe('the SotW ledger, by its own rules', () => {
  const client = CLIENTS.sotw;

  it('records an answer to a nonce other than the last as stale: not answered, its subscription kept (envoy#10363)', () => {
    const stream = new Stream('sotw');
    const first = stream.served(client);
    stream.receive(client.ack(first));
    stream.respond(CLUSTER, A_CHANGED);
    expect(stream.receive(client.answerTo(CLUSTER, first.nonce))).toEqual({ kind: 'stale', nonce: first.nonce });
    expect(stream.ledger.report(CLUSTER)?.acked?.nonce).toBe(first.nonce);
  });

  describe('an EDS, RDS or SDS response carries only what changed since the ACKed one (xDS: not full-state)', () => {
    const B_MOVED = snapshot(2, [cluster('a'), cluster('b')], { b: 8080 });
    /** A stream that was sent A's endpoints, `a` and `b`, and ACKed them when `ack`. */
    const endpointsSent = (ack: boolean) => {
      const stream = new Stream('sotw');
      stream.receive(client.subscribe(ENDPOINT, ['a', 'b']));
      const first = stream.respond(ENDPOINT, A)!;
      if (ack) stream.receive(client.ack(first));
      return { stream, first };
    };

    it('sends the changed resource alone once the last response was ACKed, and records all it holds', () => {
      const { stream, first } = endpointsSent(true);
      const next = stream.respond(ENDPOINT, B_MOVED);
      expect(names(next)).toEqual(['b']);
      // Its version is the whole set's, as a full response's would be.
      expect(next?.version).toBe(endpointsSent(false).stream.respond(ENDPOINT, B_MOVED)?.version);
      expect(next?.version).not.toBe(first.version);
      expect(stream.ledger.report(ENDPOINT)?.sent?.resources.map((resource) => resource.name)).toEqual(['a', 'b']);
    });

    it('sends them all when the last response was not ACKed (NACKed, or not answered yet)', () => {
      const unanswered = endpointsSent(false).stream;
      expect(names(unanswered.respond(ENDPOINT, B_MOVED))).toEqual(['a', 'b']);
      const { stream, first } = endpointsSent(false);
      stream.receive(client.nack(first, 'rejected'));
      expect(names(stream.respond(ENDPOINT, B_MOVED))).toEqual(['a', 'b']);
    });

    it('sends them all on a resend (a warming cluster) and after the subscription changed', () => {
      const { stream } = endpointsSent(true);
      expect(names(stream.respond(ENDPOINT, B_MOVED, new Set(['a'])))).toEqual(['a', 'b']);
      const resubscribed = endpointsSent(true).stream;
      resubscribed.receive({ protocol: 'sotw', typeUrl: ENDPOINT, versionInfo: '', resourceNames: ['b', 'a'], responseNonce: '' });
      resubscribed.receive(client.subscribe(ENDPOINT, ['a']));
      expect(names(resubscribed.respond(ENDPOINT, B_MOVED))).toEqual(['a']);
    });

    it('answers streams that hold the same resources each by what it is sent now, whichever was asked before', () => {
      const A_MOVED = snapshot(3, [cluster('a'), cluster('b')], { a: 8080 });
      const [one, two, three] = [endpointsSent(true), endpointsSent(true), endpointsSent(true)];
      expect(names(one.stream.respond(ENDPOINT, B_MOVED))).toEqual(['b']);
      expect(names(two.stream.respond(ENDPOINT, A_MOVED))).toEqual(['a']);
      expect(names(three.stream.respond(ENDPOINT, B_MOVED))).toEqual(['b']);
    });

    it('keeps CDS and LDS whole', () => {
      const stream = new Stream('sotw');
      stream.receive(client.ack(stream.served(client)));
      expect(names(stream.respond(CLUSTER, A_CHANGED))).toEqual(['a', 'b']);
    });
  });

  it('skips the first response to a reconnecting wildcard client that already holds the version (xDS: safe to skip)', () => {
    const stream = new Stream('sotw');
    const held = new Stream('sotw').served(client).version;
    stream.receive({ protocol: 'sotw', typeUrl: CLUSTER, versionInfo: held, resourceNames: [], responseNonce: '' });
    expect(stream.ledger.holdsConfiguration()).toBe(true);
    expect(stream.respond(CLUSTER, A)).toBeUndefined();
    expect(stream.ledger.report(CLUSTER)?.sent?.version).toBe(held);
    // It holds what it would be sent: ACKed, so nothing waits for an ACK that is never owed.
    expect(stream.ledger.report(CLUSTER)?.acked).toMatchObject({ version: held, nonce: stream.ledger.report(CLUSTER)?.sent?.nonce });
  });

  it('sends nothing for a named LDS or CDS resource that does not exist yet, rather than an empty full-state response', () => {
    const stream = new Stream('sotw');
    stream.receive(client.subscribe(CLUSTER, ['not-yet']));
    expect(stream.respond(CLUSTER, A)).toBeUndefined();
  });
});

describe('the Delta ledger, by its own rules', () => {
  const client = CLIENTS.delta;

  it('treats an answer to a nonce other than the last as a request, never dropping it (rule 1)', () => {
    const stream = new Stream('delta');
    const first = stream.served(client);
    stream.receive(client.ack(first));
    stream.respond(CLUSTER, A_CHANGED);
    expect(stream.receive(client.answerTo(CLUSTER, first.nonce))).toEqual({ kind: 'request' });
  });

  it('sends only the resources that changed, and tells of a named resource that does not exist (rules 7, 8)', () => {
    const stream = new Stream('delta');
    stream.receive(client.ack(stream.served(client)));
    const changed = stream.respond(CLUSTER, A_CHANGED);
    expect(names(changed)).toEqual(['a']);
    stream.receive(client.subscribe(ENDPOINT, ['missing']));
    const endpoints = stream.respond(ENDPOINT, A);
    expect(endpoints?.protocol === 'delta' && endpoints.removed).toEqual(['missing']);
  });

  it('holds configuration when the first request names what it holds, and sends only what differs (rule 6)', () => {
    const served = new Stream('delta').served(client);
    const held = Object.fromEntries(served.resources.map((resource) => [resource.name, resource.version]));
    const stream = new Stream('delta');
    stream.receive({ protocol: 'delta', typeUrl: CLUSTER, subscribe: [], unsubscribe: [], initialVersions: held, responseNonce: '' });
    expect(stream.ledger.holdsConfiguration()).toBe(true);
    expect(names(stream.respond(CLUSTER, A_CHANGED))).toEqual(['a']);
  });
});
