import { readdirSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as yamlText } from 'yaml';
import { ERROR_STATUS } from '../../src/api/index.js';
import { asSeq } from '../../src/store/index.js';
import { fuzz, HOSTILE_TEXT } from '../support/fuzz.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { rawHttp, type RawResponse } from '../support/raw-http.js';
import { servedConfiguration, type ServedConfiguration } from '../support/well-behaved-node.js';
import { envoyDataplane } from '../xds/fixtures.js';

/**
 * Property-based tests of the HTTP API (issue 11): generated malformed bodies, headers, URLs,
 * methods and raw requests against a real control plane on the default PGlite store. Every
 * answer must be a documented refusal that stored nothing, or, for the rare generated input
 * that is a valid write, exactly that write; the process must keep serving, and a well-behaved
 * node its real configuration. A failure prints the seed to replay it (test/support/fuzz.ts).
 */
let harness: Harness;
let base: string;
let configuration: ServedConfiguration;

beforeAll(async () => {
  harness = await startHarness({ store: 'pglite:memory' });
  base = `http://${harness.api}`;
  await harness.cp.apply(backendDataplane('backend-1', 10001));
  await harness.cp.apply(envoyDataplane('web-1'));
  configuration = await servedConfiguration(harness.xds, 'default.web-1');
});
afterAll(() => harness.stop());

/** After each property: the process answers, and the well-behaved node is served what it was before. */
async function stillServing(): Promise<void> {
  expect((await fetch(`${base}/healthz`)).status).toBe(200);
  expect(await servedConfiguration(harness.xds, 'default.web-1')).toEqual(configuration);
}

/** The one target the body and header properties write to: a write that happens to be valid creates only it. */
const TARGET = '/meshes/default/dataplanes/fuzz-target';

/**
 * Checks one answer: a refusal is a 4xx `{ code, field?, reason, issues? }` whose code has that
 * status, and the log has no event since `before`; anything else must be a write the API
 * acknowledged (2xx), with exactly its one event in the log.
 */
async function expectRefusalOrWrite(response: { status: number; body: string }, before: number): Promise<void> {
  const events = await harness.cp.store.readEvents(asSeq(before), 10);
  if (response.status >= 200 && response.status < 300) {
    expect(events).toHaveLength(1);
    return;
  }
  expect(response.status, response.body).toBeGreaterThanOrEqual(400);
  expect(response.status, response.body).toBeLessThan(500);
  const answer = JSON.parse(response.body) as Record<string, unknown>;
  expect(Object.keys(answer).filter((key) => !['code', 'field', 'reason', 'issues'].includes(key))).toEqual([]);
  expect(ERROR_STATUS[answer.code as keyof typeof ERROR_STATUS], response.body).toBe(response.status);
  expect(typeof answer.reason).toBe('string');
  // A reason quotes request values cut short: it never grows with them.
  expect(String(answer.reason).length).toBeLessThan(1_024);
  expect(events).toEqual([]);
}

async function send(path: string, init: RequestInit): Promise<{ status: number; body: string }> {
  const response = await fetch(`${base}${path}`, init);
  return { status: response.status, body: await response.text() };
}

const revision = () => harness.cp.store.projection.revision;

/** A value of any shape: strings of any code units, keys of hostile text, a few levels deep. */
const ANY_VALUE = fc.anything({ maxDepth: 4, maxKeys: 6, stringUnit: 'binary', key: HOSTILE_TEXT });

/** A Dataplane almost right, with hostile text or values where names, addresses and tags go. */
const NEAR_DATAPLANE = fc.record(
  {
    type: fc.oneof(fc.constant('Dataplane'), HOSTILE_TEXT),
    mesh: fc.oneof(fc.constant('default'), HOSTILE_TEXT),
    name: fc.oneof(fc.constant('fuzz-target'), HOSTILE_TEXT, ANY_VALUE),
    networking: fc.record(
      {
        address: fc.oneof(fc.constant('127.0.0.1'), HOSTILE_TEXT, ANY_VALUE),
        inbound: fc.array(
          fc.record({
            port: fc.oneof(fc.integer({ min: -10, max: 70_000 }), ANY_VALUE),
            tags: fc.dictionary(HOSTILE_TEXT, fc.oneof(HOSTILE_TEXT, ANY_VALUE), { maxKeys: 40 }),
          }),
          { maxLength: 3 },
        ),
        outbound: fc.array(fc.record({ port: fc.integer({ min: 0, max: 70_000 }), service: HOSTILE_TEXT }), { maxLength: 2 }),
      },
      { requiredKeys: [] },
    ),
    version: fc.oneof(fc.integer(), HOSTILE_TEXT),
  },
  { requiredKeys: [] },
);

/** Nesting `depth` deep, written out as text (JSON.stringify would recurse). */
const NESTED = fc.tuple(fc.integer({ min: 20, max: 6_000 }), fc.constantFrom('[]', '{}', 'yaml-block')).map(([depth, kind]) =>
  kind === '[]' ? '['.repeat(depth) + ']'.repeat(depth) : kind === '{}' ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '- '.repeat(depth) + 'x',
);

/** YAML only YAML can say: anchors and aliases (looping, or multiplying a large string), tags, merges, complex keys. */
const YAML_ONLY = fc.oneof(
  fc.constant('name: &a [*a]\n'),
  fc.constant('a: &a {b: *a}\nname: *a\n'),
  fc.integer({ min: 1, max: 90_000 }).map((size) => `x: &x "${'x'.repeat(size)}"\nnetworking: {address: *x, inbound: [${Array(60).fill('*x').join(', ')}]}\n`),
  fc.constant('a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nname: [*c, *c, *c, *c, *c, *c]\n'),
  fc.constantFrom('name: !!binary aGVsbG8=\n', 'name: !!set {a, b}\n', 'name: !foo bar\n', '<<: {name: x}\n', '? [a, b]\n: c\n', 'name: *undefined\n', '%YAML 1.1\n---\nname: x\n', '--- a\n--- b\n'),
  ANY_VALUE.map((value) => yamlText(value, { aliasDuplicateObjects: false }) ?? ''),
);

const BODY = fc.oneof(
  ANY_VALUE.map((value) => JSON.stringify(value) ?? ''),
  NEAR_DATAPLANE.map((value) => JSON.stringify(value)),
  NEAR_DATAPLANE.map((value) => yamlText(value)),
  NESTED,
  YAML_ONLY,
  HOSTILE_TEXT,
  fc.constant('x'.repeat(1_100_000)),
);

/** Printable header values: fetch refuses to send others (the raw property sends those). */
const HEADER_VALUE = fc.oneof(fc.stringMatching(/^[\x21-\x7e]{0,60}$/), fc.constantFrom('*', '"1"', 'W/"1"', '"99999999999999999999"', '1, 2', ''));
const CONTENT_TYPE = fc.oneof(
  fc.constantFrom('application/json', 'application/yaml', 'application/x-yaml', 'text/yaml', 'application/json; charset=utf-8', 'text/plain', 'application/octet-stream', 'multipart/form-data; boundary=x'),
  HEADER_VALUE,
);
const HEADERS = fc.record(
  { 'content-type': CONTENT_TYPE, 'if-match': HEADER_VALUE, 'if-none-match': HEADER_VALUE, accept: HEADER_VALUE },
  { requiredKeys: [] },
);

/** Names that exist, whose routes answer 2xx, or stream forever (`/sessions/events`): no hostile segment may be one. */
const ROOTS = ['meshes', 'dataplanes', 'history', 'xds', 'healthz', 'readyz', 'metrics', 'sessions', 'instances', 'events', 'statechart', 'ui'];
const KNOWN = new Set(['default', 'backend-1', 'web-1', 'fuzz-target', ...ROOTS, ...readdirSync(new URL('../../src/api/ui/', import.meta.url))]);
/** Percent-encodes the UTF-8 of `text` (a lone surrogate as U+FFFD, as Node writes it); encodeURIComponent throws on those. */
function percentEncoded(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((byte) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).padStart(2, '0')}`)).join('');
}

const PERCENT_GARBAGE = fc.constantFrom('%', '%Z', '%ZZ', '%FF', '%FF%FE', '%C0%AF', '%ED%A0%80', '%00', '%0A', '%E2%82', '%%', '%2F', '%2e%2e');
const SEGMENT = fc
  .oneof(
    HOSTILE_TEXT.map(percentEncoded),
    fc.tuple(HOSTILE_TEXT, PERCENT_GARBAGE, HOSTILE_TEXT).map(([a, garbage, b]) => `${percentEncoded(a)}${garbage}${percentEncoded(b)}`),
    fc.integer({ min: 64, max: 4_000 }).map((length) => 'a'.repeat(length)),
  )
  .filter((segment) => segment !== '' && !KNOWN.has(segment));
const ROUTE = fc.constantFrom(
  '/meshes/{}',
  '/meshes/{}/dataplanes',
  '/meshes/{}/history',
  '/meshes/default/dataplanes/{}',
  '/meshes/default/dataplanes/{}/history',
  '/meshes/{}/dataplanes/web-1',
  '/sessions/{}',
  '/sessions/{}/xds',
  '/sessions/{}/history',
  '/ui/{}',
  '/{}',
  '/meshes/default/{}',
);
const QUERY = fc.option(fc.array(fc.tuple(HOSTILE_TEXT, HOSTILE_TEXT), { maxLength: 3 }).map((pairs) => `?${pairs.map(([k, v]) => `${percentEncoded(k)}=${percentEncoded(v)}`).join('&')}`), { nil: '' });
const METHOD = fc.constantFrom('GET', 'PUT', 'DELETE', 'POST', 'PATCH', 'OPTIONS', 'PROPFIND', 'FOO');

describe('the HTTP API refuses malformed input cleanly, found by fuzzing (issue 11)', () => {
  it('refuses every malformed body, in any content type and with any conditional headers, storing nothing', async () => {
    await fuzz(
      fc.asyncProperty(BODY, HEADERS, fc.constantFrom('PUT', 'PUT', 'PUT', 'POST', 'PATCH'), async (body, headers, method) => {
        const before = revision();
        await expectRefusalOrWrite(await send(TARGET, { method, headers, body }), before);
      }),
      { runs: 400 },
    );
    await stillServing();
  });

  it('refuses every malformed URL and wrong method with a documented 4xx, storing nothing', async () => {
    await fuzz(
      fc.asyncProperty(ROUTE, SEGMENT, QUERY, METHOD, async (route, segment, query, method) => {
        const before = revision();
        const answer = await send(`${route.replace('{}', segment)}${query}`, { method });
        expect(answer.status).toBeGreaterThanOrEqual(400);
        await expectRefusalOrWrite(answer, before);
      }),
      { runs: 400 },
    );
    await stillServing();
  });

  it('answers requests Node cannot parse, or will not, in the same shape', async () => {
    const LINE_METHOD = fc.oneof(METHOD, HOSTILE_TEXT);
    const served = new RegExp(`^(${ROOTS.join('|')})\\b`);
    const TARGET_TEXT = fc.oneof(
      SEGMENT.map((segment) => `/meshes/${segment}`),
      HOSTILE_TEXT.filter((text) => !served.test(text)).map((text) => `/${text}`),
      fc.constantFrom('*', 'http://evil/meshes/x', '', '//'),
    );
    const HEADER_LINE = fc.tuple(HOSTILE_TEXT, HOSTILE_TEXT).map(([name, value]) => `${name}: ${value}`);
    await fuzz(
      fc.asyncProperty(LINE_METHOD, TARGET_TEXT, fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9', ''), fc.array(HEADER_LINE, { maxLength: 4 }), async (method, target, version, headers) => {
        const before = revision();
        const request = [`${method} ${target} ${version}`, 'Host: fuzz', ...headers, 'Connection: close', '', ''].join('\r\n');
        const response: RawResponse = await rawHttp(harness.api, request);
        await expectRefusalOrWrite(response, before);
      }),
      { runs: 300 },
    );
    await stillServing();
  });
});
