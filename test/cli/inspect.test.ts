import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetSession } from '../../src/fleet/fleet-sessions.js';
import { SESSION_STATES } from '../../src/machines/index.js';
import type { SessionView } from '../../src/machines/session-view.js';
import { apiFor, type ApiHarness, fakeSessions, sessionView, startApi } from '../api/api-harness.js';
import { runCli } from './cli-harness.js';

const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const EDS = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
const LDS = 'type.googleapis.com/envoy.config.listener.v3.Listener';

const SERVING: SessionView = sessionView('default.backend-1', 'serving', {
  revision: 7,
  stream: { id: 's-3', peer: '127.0.0.1:50122', openedAt: '2026-01-05T10:00:00.000Z', protocol: 'sotw', authentication: { by: 'none' } },
  types: {
    CDS: {
      typeUrl: CDS,
      subscription: { wildcard: true, names: [] },
      sent: { version: 'c-9f1', nonce: '4', resources: 2, at: '2026-01-05T10:00:00.020Z' },
      acked: { version: 'c-9f1', nonce: '4', at: '2026-01-05T10:00:00.031Z' },
    },
    LDS: {
      typeUrl: LDS,
      subscription: { wildcard: false, names: ['backend', 'web'] },
      sent: { version: 'l-77a', nonce: '5', resources: 1, at: '2026-01-05T10:00:00.040Z' },
      nacked: { version: 'l-77a', nonce: '5', message: 'Listener web:\nport 0 is invalid', at: '2026-01-05T10:00:00.052Z' },
    },
  },
  transitions: [
    { at: '2026-01-05T10:00:00.001Z', event: 'stream.request', from: 'connecting', to: 'generating' },
    { at: '2026-01-05T10:00:00.015Z', event: 'snapshot.generated', from: 'generating', to: 'serving', detail: { revision: 7 } },
    { at: '2026-01-05T10:00:00.052Z', event: 'nack.received', from: 'serving', to: 'serving', detail: { typeUrl: LDS, nonce: '5', message: 'port 0 is invalid' } },
  ],
});
/** A Delta node that came back holding its clusters: none was sent again, and it holds both. */
const DELTA: SessionView = sessionView('default.web-1', 'serving', {
  revision: 8,
  stream: { id: 's-5', peer: '127.0.0.1:50200', openedAt: '2026-01-05T10:01:00.000Z', protocol: 'delta', authentication: { by: 'none' } },
  types: {
    CDS: {
      typeUrl: CDS,
      subscription: { wildcard: true, names: [] },
      sent: { version: 'c-9f1', nonce: '1', resources: 0, at: '2026-01-05T10:01:00.020Z' },
      acked: { version: 'c-9f1', nonce: '1', at: '2026-01-05T10:01:00.031Z' },
      held: { backend: 'v-backend', 'localhost:9002': 'v-local' },
    },
    EDS: {
      typeUrl: EDS,
      subscription: { wildcard: false, names: ['backend'] },
      sent: { version: 'e-1', nonce: '2', resources: 1, at: '2026-01-05T10:01:00.040Z' },
      held: { backend: 'v-cla' },
    },
  },
  transitions: [
    {
      at: '2026-01-05T10:01:00.001Z',
      event: 'stream.opened',
      from: 'connecting',
      to: 'catching-up',
      detail: { stream: 's-5', peer: '127.0.0.1:50200', protocol: 'delta', typeUrl: CDS, holds: 2 },
    },
  ],
});
const WAITING = sessionView('payments.ledger-1', 'awaiting-snapshot', {
  error: { code: 'CHANCERY_MESH_DATAPLANE_NOT_FOUND', message: 'dataplane ledger-1 does not exist' },
  types: { CDS: { typeUrl: CDS, subscription: { wildcard: true, names: [] } } },
});

const api = apiFor({ scope: 'all', sessions: fakeSessions([WAITING, SERVING, DELTA]) });

const cli = (...argv: string[]) => runCli(argv, { env: { CHANCERY_API_ADDRESS: api.address } });

describe('chancery inspect', () => {
  it('lists the sessions with a per-type ACK, NACK, sent (no answer yet) or nothing-sent marker', async () => {
    const { code, stdout } = await cli('inspect');
    expect(code).toBe(0);
    expect(stdout.split('\n')).toEqual([
      'NODE                STATE               REVISION   CDS   EDS    LDS    ERROR',
      'default.backend-1   serving             7          ACK   -      NACK',
      'default.web-1       serving             8          ACK   sent   -',
      'payments.ledger-1   awaiting-snapshot   -          -     -      -      CHANCERY_MESH_DATAPLANE_NOT_FOUND',
      '',
    ]);
  });

  it('passes the state and mesh filters to the server', async () => {
    const { stdout } = await cli('inspect', '--state', 'serving', '--mesh', 'default');
    expect(stdout).toContain('default.backend-1');
    expect(stdout).not.toContain('payments.ledger-1');
  });

  it('shows one session: stream, per-type versions and nonces, the last NACK and a timeline', async () => {
    const { code, stdout } = await cli('inspect', 'default.backend-1');
    expect(code).toBe(0);
    expect(stdout).toBe(
      [
        'Node:      default.backend-1',
        'State:     serving',
        'Instance:  test',
        'Stream:    s-3 from 127.0.0.1:50122, opened 2026-01-05T10:00:00.000Z',
        'Protocol:  State of the World',
        'Proven by: nothing: its mesh does not ask',
        'Revision:  7',
        '',
        'TYPE   SUBSCRIBED    SENT (version/nonce)   RESOURCES   ACKED     NACKED',
        'CDS    *             c-9f1/4                2           c-9f1/4   -',
        'LDS    backend,web   l-77a/5                1           -         l-77a/5',
        '',
        'Last NACK of LDS (version l-77a, nonce 5, at 2026-01-05T10:00:00.052Z):',
        '  Listener web: port 0 is invalid',
        '',
        'Transitions (oldest first):',
        '  2026-01-05T10:00:00.001Z  connecting → generating  on stream.request',
        '  2026-01-05T10:00:00.015Z  generating → serving  on snapshot.generated  revision=7',
        '  2026-01-05T10:00:00.052Z  serving  on nack.received  LDS nonce=5 message=port 0 is invalid',
        '',
      ].join('\n'),
    );
  });

  it('shows a Delta session: its protocol, and what the node holds of each type beside what was last sent', async () => {
    const { code, stdout } = await cli('inspect', 'default.web-1');
    expect(code).toBe(0);
    expect(stdout).toBe(
      [
        'Node:      default.web-1',
        'State:     serving',
        'Instance:  test',
        'Stream:    s-5 from 127.0.0.1:50200, opened 2026-01-05T10:01:00.000Z',
        'Protocol:  Delta',
        'Proven by: nothing: its mesh does not ask',
        'Revision:  8',
        '',
        'TYPE   SUBSCRIBED   SENT (version/nonce)   RESOURCES   HELD   ACKED     NACKED',
        'CDS    *            c-9f1/1                0           2      c-9f1/1   -',
        'EDS    backend      e-1/2                  1           1      -         -',
        '',
        'Held by the node:',
        'TYPE   NAME             VERSION',
        'CDS    backend          v-backend',
        'CDS    localhost:9002   v-local',
        'EDS    backend          v-cla',
        '',
        'Transitions (oldest first):',
        '  2026-01-05T10:01:00.001Z  connecting → catching-up  on stream.opened  stream=s-5 peer=127.0.0.1:50200 protocol=delta CDS holds=2',
        '',
      ].join('\n'),
    );
  });

  it('names every session state in its help, evicted included, for --state', async () => {
    const { code, stdout } = await cli('inspect', '--help');
    expect(code).toBe(0);
    expect(SESSION_STATES).toContain('evicted');
    expect(stdout).toContain(`only sessions in this state: ${SESSION_STATES.join(', ')}\n`);
  });

  it('prints a session as JSON', async () => {
    const { stdout } = await cli('inspect', 'payments.ledger-1', '-o', 'json');
    expect(JSON.parse(stdout)).toEqual(WAITING);
  });

  it('exits 1 naming the node when it has no session here', async () => {
    const { code, stderr } = await cli('inspect', 'default.nobody');
    expect(code).toBe(1);
    expect(stderr).toContain('CHANCERY_API_SESSION_NOT_FOUND (HTTP 404): no session for node default.nobody on this instance');
  });
});

describe('chancery inspect --fleet', () => {
  /** The node served by cp-b before it moved here: cp-b's session as cp-b last saved it. */
  const BEFORE: FleetSession = {
    ...SERVING,
    instance: 'cp-b',
    state: 'disconnected',
    recordedAt: '2026-01-05T09:59:59.500Z',
    transitions: [
      { at: '2026-01-05T09:59:58.000Z', event: 'stream.opened', from: 'connecting', to: 'generating' },
      { at: '2026-01-05T09:59:58.010Z', event: 'snapshot.generated', from: 'generating', to: 'serving', detail: { revision: 6 } },
      { at: '2026-01-05T09:59:59.400Z', event: 'stream.closed', from: 'serving', to: 'disconnected', detail: { reason: 'stream cancelled' } },
    ],
  };
  let fleetApi: ApiHarness;
  beforeAll(async () => {
    fleetApi = await startApi({ sessions: fakeSessions([WAITING, SERVING]), others: [BEFORE] });
  });
  afterAll(async () => {
    await fleetApi.close();
  });
  const fleetCli = (...argv: string[]) => runCli(argv, { env: { CHANCERY_API_ADDRESS: fleetApi.address } });

  it('lists every instance’s sessions with an INSTANCE column', async () => {
    const { code, stdout } = await fleetCli('inspect', '--fleet');
    expect(code).toBe(0);
    expect(stdout.split('\n')).toEqual([
      'NODE                INSTANCE   STATE               REVISION   CDS   LDS    ERROR',
      'default.backend-1   cp-b       disconnected        7          ACK   NACK',
      'default.backend-1   test       serving             7          ACK   NACK',
      'payments.ledger-1   test       awaiting-snapshot   -          -     -      CHANCERY_MESH_DATAPLANE_NOT_FOUND',
      '',
    ]);
  });

  it('tells one node’s story across instances, in time order, naming where each step happened', async () => {
    const { code, stdout } = await fleetCli('inspect', 'default.backend-1', '--fleet');
    expect(code).toBe(0);
    expect(stdout).toBe(
      [
        'Node:      default.backend-1',
        'Sessions:  cp-b disconnected (saved 2026-01-05T09:59:59.500Z), test serving (live)',
        '',
        'Transitions across the fleet (oldest first):',
        '  2026-01-05T09:59:58.000Z  cp-b  connecting → generating  on stream.opened',
        '  2026-01-05T09:59:58.010Z  cp-b  generating → serving  on snapshot.generated  revision=6',
        '  2026-01-05T09:59:59.400Z  cp-b  serving → disconnected  on stream.closed  reason=stream cancelled',
        '  2026-01-05T10:00:00.001Z  test  connecting → generating  on stream.request',
        '  2026-01-05T10:00:00.015Z  test  generating → serving  on snapshot.generated  revision=7',
        `  2026-01-05T10:00:00.052Z  test  serving  on nack.received  ${LDS} nonce=5 message=port 0 is invalid`,
        '',
      ].join('\n'),
    );
  });

  it('exits 1 naming the node when no instance has a session for it', async () => {
    const { code, stderr } = await fleetCli('inspect', 'default.nobody', '--fleet');
    expect(code).toBe(1);
    expect(stderr).toContain('CHANCERY_API_SESSION_NOT_FOUND (HTTP 404): no session for node default.nobody on any live instance');
  });
});
