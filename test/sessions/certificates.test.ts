import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { rotateMeshAuthority } from '../../src/identity/index.js';
import { generate, validate } from '../../src/mesh/index.js';
import { CertificateKeeper, SessionRegistry, SessionScheduler, SessionViews } from '../../src/sessions/index.js';
import { createMemoryStore, type ResourceStore } from '../../src/store/index.js';
import type { TypeUrl, XdsResponse } from '../../src/xds/index.js';
import { CLUSTER, LISTENER, SECRET } from '../../src/xds/type-urls.js';
import { envoyDataplane } from '../xds/fixtures.js';
import { RecordingSink } from '../support/recording-sink.js';


const NODE = 'default.web-1';
const TTL = 30_000;
const GRACE = 10_000;
const stream = (id: string) => ({ id, peer: 'test', openedAt: 0, protocol: 'sotw' as const, authentication: { by: 'none' as const } });
const request = (typeUrl: TypeUrl, resourceNames: readonly string[] = [], responseNonce = '', versionInfo = '') =>
  ({ protocol: 'sotw', typeUrl, versionInfo, resourceNames, responseNonce, nodeId: NODE }) as const;

let store: ResourceStore | undefined;
afterEach(() => store?.close());

/**
 * A registry over a memory store whose mesh is strict, with the real certificate keeper behind
 * an issuer a test can make fail, on a simulated clock that is also the certificates' clock.
 */
async function mtlsRegistry() {
  store = createMemoryStore({ instance: 'certificates' });
  await store.start();
  const mesh = validate({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode: 'strict', certificateTTL: '30s' } });
  const dataplane = validate(envoyDataplane('web-1'));
  if (!mesh.ok || !dataplane.ok) throw new Error('fixture is invalid');
  await store.put(mesh.resource);
  await store.put(dataplane.resource);
  await rotateMeshAuthority(store, 'default', 1_800_000_000_000);
  const clock = new SimulatedClock();
  const now = () => 1_800_000_000_000 + clock.now();
  const keeper = new CertificateKeeper({ projection: () => store!.projection, now });
  let issuing = 0;
  let failing = 0;
  const generations = { ok: 0, failed: 0 };
  const scheduler = new SessionScheduler();
  const registry = new SessionRegistry({
    instanceId: 'certificates',
    evictionGrace: GRACE,
    generate: (node) => {
      const result = generate(node, store!.projection, keeper.current(node));
      generations[result.ok ? 'ok' : 'failed'] += 1;
      return result.ok ? result : { ok: false, revision: store!.projection.revision, error: { code: result.error.code, message: result.error.message } };
    },
    revision: () => store!.projection.revision,
    catchUp: () => store!.refresh(),
    now,
    clock,
    scheduler,
    logger: pino({ level: 'silent' }),
    certificates: {
      issue: (node) => {
        issuing += 1;
        const issued = failing-- > 0 ? Promise.reject(new Error('the store is unreachable')) : keeper.issue(node);
        return issued.finally(() => (issuing -= 1));
      },
      handOver: (node) => keeper.handOver(node),
      forget: (node) => keeper.forget(node),
    },
  });
  const views = new SessionViews(registry, 'certificates');
  /**
   * Lets the sessions, the scheduler and the issuer run to rest: no certificate being issued
   * (WebCrypto works off the loop, for as long as the machine's load makes it) for a few turns.
   */
  const settled = async () => {
    for (let quiet = 0; quiet < 5; quiet = issuing === 0 ? quiet + 1 : 0) {
      await scheduler.settled('requests');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  return { registry, keeper, clock, views, settled, generations, failNext: (times: number) => (failing = times) };
}

/**
 * I8 for what a client was sent: every Secret a Listener or Cluster it holds names is one it was
 * sent, non-empty, on the same stream.
 */
function assertNoMissingSecret(sink: RecordingSink): void {
  const latest = new Map<string, XdsResponse>();
  for (const response of sink.sent) latest.set(response.typeUrl, response);
  const named = [CLUSTER, LISTENER].flatMap((typeUrl) => latest.get(typeUrl)?.resources.flatMap((resource) => resource.secrets) ?? []);
  const secrets = latest.get(SECRET)?.resources ?? [];
  for (const name of named) expect(secrets.find((secret) => secret.name === name)?.any.length ?? 0, `Secret ${name}`).toBeGreaterThan(0);
}

describe('certificates in the session chart', () => {
  it('issues before the first push, renews at 2/3 of the life by an SDS push alone, keeps what the node holds while issuing fails and retries, and leaves nothing once evicted', async () => {
    const { registry, keeper, clock, views, settled, failNext } = await mtlsRegistry();
    const sink = new RecordingSink();
    registry.open(stream('s1'), sink, NODE, request(CLUSTER));
    await settled();
    // Generation waited for the certificate (I8: never a configuration naming a Secret it cannot hold).
    expect(views.get(NODE)?.state).toBe('serving');
    expect(views.get(NODE)?.certificate?.issuer).toBe('ca-1');
    const cds = sink.sent.at(-1)!;
    registry.request(NODE, 's1', request(CLUSTER, [], cds.nonce, cds.version));
    registry.request(NODE, 's1', request(LISTENER));
    await settled();
    const lds = sink.sent.at(-1)!;
    registry.request(NODE, 's1', request(LISTENER, [], lds.nonce, lds.version));
    registry.request(NODE, 's1', request(SECRET, ['mtls:identity', 'mtls:trust:default']));
    await settled();
    expect(sink.sent.map((response) => response.typeUrl)).toEqual([CLUSTER, LISTENER, SECRET]);
    assertNoMissingSecret(sink);
    const first = views.get(NODE)!.certificate!;
    expect(first).toMatchObject({ spiffeIds: ['spiffe://default/web'], issuer: 'ca-1' });

    // The renewal is the chart's event, on the injected clock: the new certificate is an SDS push, and nothing else.
    clock.increment(20_000);
    await settled();
    const renewed = views.get(NODE)!.certificate!;
    expect(renewed.serial).not.toBe(first.serial);
    expect(sink.sent.map((response) => response.typeUrl)).toEqual([CLUSTER, LISTENER, SECRET, SECRET]);
    assertNoMissingSecret(sink);

    // The next renewal fails (the store down): shown, the node keeps its certificate, and it is tried again.
    failNext(1);
    clock.increment(20_000);
    await settled();
    expect(views.get(NODE)).toMatchObject({ state: 'serving', certificateError: 'the store is unreachable', certificate: { serial: renewed.serial } });
    expect(sink.sent).toHaveLength(4);
    clock.increment(1_000);
    await settled();
    expect(views.get(NODE)?.certificateError).toBeUndefined();
    expect(views.get(NODE)?.certificate?.serial).not.toBe(renewed.serial);
    expect(sink.sent.map((response) => response.typeUrl).at(-1)).toBe(SECRET);
    assertNoMissingSecret(sink);

    // A rotation puts the new CA in the trust Secret at once; the certificate moves to it at its renewal.
    await rotateMeshAuthority(store!, 'default', 1_800_000_000_000);
    registry.advance(store!.projection.revision);
    await settled();
    expect(sink.sent.at(-1)?.typeUrl).toBe(SECRET);
    assertNoMissingSecret(sink);

    // A reconnect within the grace is served the certificate the node holds.
    registry.close(NODE, 's1', 'cut');
    await settled();
    const again = new RecordingSink();
    registry.open(stream('s2'), again, NODE, request(CLUSTER));
    registry.request(NODE, 's2', request(SECRET, ['mtls:identity', 'mtls:trust:default']));
    await settled();
    expect(views.get(NODE)?.state).toBe('serving');
    assertNoMissingSecret(again);

    // Evicted: no certificate, no timer left (I3).
    registry.close(NODE, 's2', 'gone');
    await settled();
    clock.increment(GRACE);
    await settled();
    expect(registry.size).toBe(0);
    expect(keeper.size).toBe(0);
    const events = views.get(NODE);
    expect(events).toBeUndefined();
    clock.increment(TTL);
    await settled();
    expect(keeper.size).toBe(0);
  });
});

describe('a renewal due while the node is away', () => {
  it('is issued then, so the node finds a renewed certificate when it comes back within the grace, and the next renewal follows', async () => {
    const { registry, clock, views, settled } = await mtlsRegistry();
    registry.open(stream('s1'), new RecordingSink(), NODE, request(CLUSTER));
    await settled();
    const first = views.get(NODE)!.certificate!;
    clock.increment(10_000);
    registry.close(NODE, 's1', 'cut');
    await settled();
    // Past 2/3 of its life (16.7 s after it was issued), within the 10 s grace.
    clock.increment(7_000);
    await settled();
    const renewed = views.get(NODE)!;
    expect(renewed.state).toBe('disconnected');
    expect(renewed.certificate!.serial).not.toBe(first.serial);
    const sink = new RecordingSink();
    registry.open(stream('s2'), sink, NODE, request(CLUSTER));
    registry.request(NODE, 's2', request(SECRET, ['mtls:identity', 'mtls:trust:default']));
    await settled();
    expect(views.get(NODE)).toMatchObject({ state: 'serving', certificate: { serial: renewed.certificate!.serial } });
    assertNoMissingSecret(sink);
    clock.increment(20_000);
    await settled();
    expect(views.get(NODE)!.certificate!.serial).not.toBe(renewed.certificate!.serial);
  });
});

describe('a certificate issued ahead, handed to a new session', () => {
  it('is held before the first generation, which succeeds at once; it is renewed at 2/3 of its life like any other', async () => {
    const { registry, keeper, clock, views, settled, generations } = await mtlsRegistry();
    keeper.issueAhead(NODE);
    const ahead = keeper.ahead(NODE)!;
    const sink = new RecordingSink();
    registry.open(stream('s1'), sink, NODE, request(CLUSTER));
    await settled();
    expect(views.get(NODE)).toMatchObject({ state: 'serving', certificate: { issuer: 'ca-1' } });
    // Generated once, with the certificate issued ahead: no generation failed for want of it.
    expect(generations).toEqual({ ok: 1, failed: 0 });
    expect(keeper.current(NODE)?.certificate).toBe(ahead.certificate);
    registry.request(NODE, 's1', request(SECRET, ['mtls:identity', 'mtls:trust:default']));
    await settled();
    assertNoMissingSecret(sink);
    const first = views.get(NODE)!.certificate!;

    // Its renewal timer was set with the hand-over.
    clock.increment(20_000);
    await settled();
    expect(views.get(NODE)!.certificate!.serial).not.toBe(first.serial);
    expect(sink.sent.at(-1)?.typeUrl).toBe(SECRET);
    assertNoMissingSecret(sink);

    // Evicted: the certificate handed over goes with the session, and nothing issues another (I3).
    registry.close(NODE, 's1', 'gone');
    await settled();
    clock.increment(GRACE);
    await settled();
    expect([registry.size, keeper.size]).toEqual([0, 0]);
    clock.increment(TTL);
    await settled();
    expect(keeper.size).toBe(0);
  });

  it('is not handed over once its renewal came due: the session is issued one when it asks', async () => {
    const { registry, keeper, clock, views, settled, generations } = await mtlsRegistry();
    keeper.issueAhead(NODE);
    const ahead = keeper.ahead(NODE)!;
    clock.increment(20_000);
    registry.open(stream('s1'), new RecordingSink(), NODE, request(CLUSTER));
    await settled();
    expect(views.get(NODE)?.state).toBe('serving');
    expect(keeper.current(NODE)?.certificate).not.toBe(ahead.certificate);
    expect(generations).toEqual({ ok: 1, failed: 1 });
  });
});

describe('certificates issued ahead of the session', () => {
  /** A keeper over a strict mesh with one CA and `web-1`, on a clock the test moves, counting what it signs. */
  async function keeperAhead() {
    store = createMemoryStore({ instance: 'ahead' });
    await store.start();
    for (const resource of [
      { type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode: 'strict', certificateTTL: '30s' } },
      { type: 'Mesh', name: 'plain', dataplaneAuth: 'none' },
      envoyDataplane('web-1'),
      { ...envoyDataplane('web-1'), mesh: 'plain' },
    ]) {
      const valid = validate(resource);
      if (!valid.ok) throw new Error('fixture is invalid');
      await store.put(valid.resource);
    }
    await rotateMeshAuthority(store, 'default', 1_800_000_000_000);
    let now = 1_800_000_000_000;
    const signed: boolean[] = [];
    const keeper = new CertificateKeeper({ projection: () => store!.projection, now: () => now, onIssued: (renewal) => signed.push(renewal) });
    return { keeper, signed, later: (ms: number) => (now += ms) };
  }
  /** The serial of the certificate the node is served now, as its PEM carries it. */
  const servedSerial = (keeper: CertificateKeeper) => new X509Certificate(keeper.current(NODE)!.certificate).serialNumber.toLowerCase();

  it('hands the session the certificate issued ahead, signing nothing more', async () => {
    const { keeper, signed } = await keeperAhead();
    keeper.issueAhead(NODE);
    keeper.issueAhead(NODE);
    expect(signed).toEqual([false]);
    expect(keeper.current(NODE)).toBeUndefined();
    const first = await keeper.issue(NODE);
    expect(signed).toEqual([false]);
    expect(servedSerial(keeper)).toBe(first.serial);
    // Handed over once: the next ask (a renewal) signs.
    const renewed = await keeper.issue(NODE);
    expect(renewed.serial).not.toBe(first.serial);
    expect(signed).toEqual([false, true]);
    // Held by a session: nothing more is issued ahead for it.
    keeper.issueAhead(NODE);
    expect(signed).toEqual([false, true]);
  });

  it('signs anew when the Dataplane was rewritten, the CA rotated, or the renewal came due since; issues nothing ahead without mTLS', async () => {
    const { keeper, signed, later } = await keeperAhead();
    keeper.issueAhead(NODE);
    const rewritten = validate({ ...envoyDataplane('web-1'), networking: { ...envoyDataplane('web-1').networking, address: '127.0.0.2' } });
    if (!rewritten.ok) throw new Error('fixture is invalid');
    await store!.put(rewritten.resource);
    const afterRewrite = await keeper.issue(NODE);
    expect(signed).toEqual([false, false]);
    keeper.forget(NODE);

    keeper.issueAhead(NODE);
    await rotateMeshAuthority(store!, 'default', 1_800_000_000_000);
    const afterRotation = await keeper.issue(NODE);
    expect(afterRotation.issuer).toBe('ca-2');
    expect(signed).toHaveLength(4);
    keeper.forget(NODE);

    keeper.issueAhead(NODE);
    later(20_000);
    const afterDue = await keeper.issue(NODE);
    expect(afterDue.renewAt).toBeGreaterThan(1_800_000_020_000);
    expect(signed).toHaveLength(6);
    expect(servedSerial(keeper)).toBe(afterDue.serial);
    expect(new Set([afterRewrite.serial, afterRotation.serial, afterDue.serial]).size).toBe(3);

    keeper.issueAhead('plain.web-1');
    keeper.issueAhead('default.nobody');
    expect(signed).toHaveLength(6);
  });

  it('hands nothing over once the mesh’s mTLS was turned off: the session would only renew it', async () => {
    const { keeper } = await keeperAhead();
    keeper.issueAhead(NODE);
    const disabled = validate({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode: 'disabled' } });
    if (!disabled.ok) throw new Error('fixture is invalid');
    await store!.put(disabled.resource);
    expect(keeper.handOver(NODE)).toBeUndefined();
    expect(keeper.current(NODE)).toBeUndefined();
  });
});
