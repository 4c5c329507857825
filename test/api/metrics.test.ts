import { describe, expect, it } from 'vitest';
import type { SessionState } from '../../src/machines/session-view.js';
import { aggregateMetrics, ControlPlaneMetrics } from '../../src/api/index.js';
import { MemoryEventLog } from '../../src/store/index.js';
import { CLUSTER, ENDPOINT, LISTENER, PUSH_ORDER } from '../../src/xds/type-urls.js';
import { envoyHandshake } from '../support/envoy-handshake.js';
import { startHarness, type Harness } from '../support/harness.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, envoyDataplane, sessionIn, settle } from '../xds/fixtures.js';

interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

interface Exposition {
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const HELP = new RegExp(`^# HELP (${NAME}) (.*)$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`);
const LABEL = new RegExp(`^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"(?:,|$)`);
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
/** Prometheus reads values with Go's ParseFloat, which takes NaN and Inf in any case (prom-client writes `Nan`). */
const SPECIAL = /^(?:(nan)|([+-]?)inf(?:inity)?)$/i;
const SUFFIXES: Readonly<Record<string, readonly string[]>> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

/**
 * A strict reader of the Prometheus text format (0.0.4): every line is empty, a HELP, a TYPE
 * or a sample; every sample belongs to a family declared by HELP and TYPE before it; every label
 * is `name="escaped value"`; every value is a number. Anything else throws, naming the line.
 */
function parseExposition(text: string): Exposition {
  expect(text.endsWith('\n')).toBe(true);
  const types = new Map<string, string>();
  const helped = new Set<string>();
  const samples: Sample[] = [];
  for (const [index, line] of text.slice(0, -1).split('\n').entries()) {
    // The format ignores empty lines; prom-client puts one between families.
    if (line === '') continue;
    const fail = (why: string) => new Error(`line ${index + 1}: ${why}: ${JSON.stringify(line)}`);
    const help = HELP.exec(line);
    if (help) {
      if (helped.has(help[1]!)) throw fail('a second HELP');
      helped.add(help[1]!);
      continue;
    }
    const type = TYPE.exec(line);
    if (type) {
      if (types.has(type[1]!)) throw fail('a second TYPE');
      types.set(type[1]!, type[2]!);
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw fail('neither HELP, TYPE nor a sample');
    const [, name, labelText, valueText] = sample as unknown as [string, string, string | undefined, string];
    const family = [...types.keys()].find((candidate) => SUFFIXES[types.get(candidate)!]!.some((suffix) => name === candidate + suffix));
    if (family === undefined || !helped.has(family)) throw fail('a sample of no declared family');
    const special = SPECIAL.exec(valueText);
    if (!special && !NUMBER.test(valueText)) throw fail('a value that is not a number');
    const labels: Record<string, string> = {};
    let rest = labelText ?? '';
    while (rest !== '') {
      const label = LABEL.exec(rest);
      if (!label) throw fail('a malformed label');
      if (Object.hasOwn(labels, label[1]!)) throw fail('a repeated label');
      labels[label[1]!] = label[2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
      rest = rest.slice(label[0].length);
    }
    const number = !special ? Number(valueText) : special[1] ? Number.NaN : special[2] === '-' ? -Infinity : Infinity;
    samples.push({ name, labels, value: number });
  }
  return { types, samples };
}

/** The one sample named `name` whose labels include `labels`. */
function value(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = exposition.samples.filter(
    (sample) => sample.name === name && Object.entries(labels).every(([key, want]) => sample.labels[key] === want),
  );
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  return found[0]!.value;
}

async function scrape(harness: Harness): Promise<{ contentType: string | null; exposition: Exposition; text: string }> {
  const response = await fetch(`http://${harness.api}/metrics`);
  expect(response.status).toBe(200);
  const text = await response.text();
  return { contentType: response.headers.get('content-type'), exposition: parseExposition(text), text };
}

const STATES: readonly SessionState[] = ['connecting', 'awaiting-snapshot', 'serving', 'disconnected', 'evicted'];
const WEB = 'default.web-1';
const PARKED = 'default.not-yet-declared';

/** Epoch ms the control plane reads: parked ages are measured against it. */
let now: number;
const harness = harnessFor(() => {
  now = Date.parse('2030-01-01T00:00:00Z');
  return { now: () => now };
});
const open = () => harness.streams.sotw();

/**
 * An Envoy that takes its clusters (ACK), endpoints (ACK) and listeners, and NACKs the
 * listeners; a node whose Dataplane does not exist, parked; and a node that was served and
 * went away.
 */
async function fleet(): Promise<void> {
  await harness.cp.apply(BACKEND);
  await harness.cp.apply(envoyDataplane('web-1'));
  const web = open();
  await envoyHandshake(web, WEB, { nackListeners: 'bad filter chain' });
  await settle(web);

  open().send({ typeUrl: CLUSTER, nodeId: PARKED });
  await sessionIn(harness.cp, PARKED, 'awaiting-snapshot');

  const gone = open();
  gone.send({ typeUrl: CLUSTER, nodeId: 'default.backend-1' });
  await gone.nextResponse();
  gone.close();
  await sessionIn(harness.cp, 'default.backend-1', 'disconnected');
}

describe('GET /metrics', () => {
  it('answers the Prometheus text format, every family with its HELP and TYPE', async () => {
    await fleet();
    const { contentType, exposition } = await scrape(harness);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(exposition.types.get('chancery_sessions')).toBe('gauge');
    expect(exposition.types.get('chancery_session_transitions_total')).toBe('counter');
    expect(exposition.types.get('chancery_snapshot_generation_seconds')).toBe('histogram');
    expect(exposition.types.get('chancery_xds_response_bytes')).toBe('histogram');
    expect(exposition.types.get('chancery_change_feed_lag_seconds')).toBe('histogram');
    // The process's own, event-loop lag among them.
    expect(value(exposition, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('reports sessions per state equal to the registry, every state included', async () => {
    await fleet();
    const { exposition } = await scrape(harness);
    const counted = Object.fromEntries(STATES.map((state) => [state, 0]));
    for (const session of harness.cp.listSessions()) counted[session.state]! += 1;
    expect(counted).toMatchObject({ serving: 1, 'awaiting-snapshot': 1, disconnected: 1 });
    for (const state of STATES) expect(value(exposition, 'chancery_sessions', { state })).toBe(counted[state]);
  });

  it('counts pushes, bytes, ACKs and NACKs by type URL, and transitions by from and to', async () => {
    await fleet();
    const { exposition } = await scrape(harness);
    for (const typeUrl of [CLUSTER, ENDPOINT, LISTENER]) {
      const pushes = value(exposition, 'chancery_xds_pushes_total', { type_url: typeUrl });
      expect(pushes).toBeGreaterThan(0);
      expect(value(exposition, 'chancery_xds_push_bytes_total', { type_url: typeUrl })).toBeGreaterThan(0);
      expect(value(exposition, 'chancery_xds_response_bytes_count', { type_url: typeUrl })).toBe(pushes);
    }
    expect(value(exposition, 'chancery_xds_acks_total', { type_url: CLUSTER })).toBe(1);
    expect(value(exposition, 'chancery_xds_acks_total', { type_url: ENDPOINT })).toBe(1);
    expect(value(exposition, 'chancery_xds_nacks_total', { type_url: LISTENER })).toBe(1);
    expect(value(exposition, 'chancery_xds_nacks_total', { type_url: CLUSTER })).toBe(0);
    // A node whose Dataplane exists is served within the step that opens its stream; the third waits for its Dataplane.
    expect(value(exposition, 'chancery_session_transitions_total', { from: 'connecting', to: 'serving' })).toBe(2);
    expect(value(exposition, 'chancery_session_transitions_total', { from: 'connecting', to: 'awaiting-snapshot' })).toBe(1);
    expect(value(exposition, 'chancery_session_transitions_total', { from: 'serving', to: 'disconnected' })).toBe(1);
    expect(value(exposition, 'chancery_snapshot_generation_seconds_count')).toBeGreaterThanOrEqual(3);
  });

  it('counts the streams of sessions by the protocol they speak', async () => {
    await fleet();
    const delta = harness.streams.delta();
    try {
      delta.send({ typeUrl: CLUSTER, nodeId: 'default.backend-1' });
      await delta.nextResponse();
      const { exposition } = await scrape(harness);
      // web-1 and the parked node over SotW, backend-1 back over Delta.
      expect(value(exposition, 'chancery_xds_streams', { protocol: 'sotw' })).toBe(2);
      expect(value(exposition, 'chancery_xds_streams', { protocol: 'delta' })).toBe(1);
    } finally {
      delta.close();
    }
  });

  it('reports the connections of a connect storm, waiting and connecting, as the xDS server counts them', async () => {
    const census = { counts: () => Object.fromEntries(STATES.map((state) => [state, 0])) as Record<SessionState, number>, oldestParkedSince: () => undefined, streams: () => ({ sotw: 0, delta: 0 }) };
    const metrics = new ControlPlaneMetrics({ sessions: () => census, now: () => now, connections: () => ({ waiting: 1_234, connecting: 256 }) });
    const exposition = parseExposition(await metrics.text());
    expect(value(exposition, 'chancery_xds_connections', { state: 'waiting' })).toBe(1_234);
    expect(value(exposition, 'chancery_xds_connections', { state: 'connecting' })).toBe(256);
    // The control plane's own: every connection of the fleet answered, none waiting.
    await fleet();
    const served = (await scrape(harness)).exposition;
    expect(value(served, 'chancery_xds_connections', { state: 'waiting' })).toBe(0);
    expect(exposition.types.get('chancery_xds_connections')).toBe('gauge');
  });

  it('reports parked requests and how long the oldest has waited', async () => {
    await fleet();
    now += 2_500;
    const { exposition } = await scrape(harness);
    expect(value(exposition, 'chancery_parked_requests')).toBe(1);
    expect(value(exposition, 'chancery_parked_request_oldest_age_seconds')).toBe(2.5);
  });

  it('observes the change-feed lag of each store change applied after start, from the time the event was written', async () => {
    // Events stamped 250 ms behind this control plane's clock, as if another instance wrote them then.
    const log = new MemoryEventLog({ now: () => new Date(now - 250) });
    const behind = await startHarness({ store: log, now: () => now });
    try {
      const lag = async (name: string, labels: Record<string, string> = {}) => value((await scrape(behind)).exposition, name, labels);
      expect(await lag('chancery_change_feed_lag_seconds_count')).toBe(0);
      await behind.cp.apply(BACKEND);
      await behind.cp.apply(envoyDataplane('web-1'));
      expect(await lag('chancery_change_feed_lag_seconds_count')).toBe(2);
      expect(await lag('chancery_change_feed_lag_seconds_sum')).toBe(0.5);
      expect(await lag('chancery_change_feed_lag_seconds_bucket', { le: '0.1' })).toBe(0);
      expect(await lag('chancery_change_feed_lag_seconds_bucket', { le: '0.25' })).toBe(2);
    } finally {
      await behind.stop();
      await log.close();
    }
  });

  it('creates no series per node: no label value names a node', async () => {
    await fleet();
    const { exposition, text } = await scrape(harness);
    const nodes = harness.cp.listSessions().map((session) => session.node);
    expect(nodes).toHaveLength(3);
    for (const sample of exposition.samples) {
      for (const label of Object.values(sample.labels)) expect(nodes.some((node) => label.includes(node))).toBe(false);
    }
    expect(nodes.filter((node) => text.includes(node))).toEqual([]);
    const typeUrls = new Set(exposition.samples.flatMap((sample) => (sample.labels.type_url === undefined ? [] : [sample.labels.type_url])));
    expect([...typeUrls].every((typeUrl) => (PUSH_ORDER as readonly string[]).includes(typeUrl))).toBe(true);
  });

  it('keeps each control plane its own metrics in one process', async () => {
    await fleet();
    const other = await startHarness();
    try {
      const { exposition } = await scrape(other);
      for (const state of STATES) expect(value(exposition, 'chancery_sessions', { state })).toBe(0);
      expect(value(exposition, 'chancery_xds_pushes_total', { type_url: CLUSTER })).toBe(0);
      expect(value((await scrape(harness)).exposition, 'chancery_sessions', { state: 'serving' })).toBe(1);
    } finally {
      await other.stop();
    }
  });

  it("adds up several control planes' metrics as the workers of chancery run --workers serve them: counts summed, the longest parked wait the longest", async () => {
    await fleet();
    const other = await startHarness({ now: () => now });
    try {
      // Parked here 3 s after the first control plane's parked node, then 2 s pass: waits of 5 s and 2 s.
      now += 3_000;
      const parked = harness.streams.sotw({ address: other.xds });
      parked.send({ typeUrl: CLUSTER, nodeId: 'default.parked-elsewhere' });
      await sessionIn(other.cp, 'default.parked-elsewhere', 'awaiting-snapshot');
      now += 2_000;
      const [one, two] = [(await scrape(harness)).exposition, (await scrape(other)).exposition];
      const sum = parseExposition(await aggregateMetrics([await harness.cp.metrics.json(), await other.cp.metrics.json()]));
      for (const state of STATES) {
        expect(value(sum, 'chancery_sessions', { state }), state).toBe(value(one, 'chancery_sessions', { state }) + value(two, 'chancery_sessions', { state }));
      }
      expect(value(sum, 'chancery_sessions', { state: 'awaiting-snapshot' })).toBe(2);
      expect(value(sum, 'chancery_xds_pushes_total', { type_url: CLUSTER })).toBe(value(one, 'chancery_xds_pushes_total', { type_url: CLUSTER }));
      expect(value(sum, 'chancery_parked_request_oldest_age_seconds')).toBe(5);
      expect(value(sum, 'chancery_snapshot_generation_seconds_count')).toBe(
        value(one, 'chancery_snapshot_generation_seconds_count') + value(two, 'chancery_snapshot_generation_seconds_count'),
      );
    } finally {
      await other.stop();
    }
  });
});
