import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createControlPlane, type ControlPlane } from '../../src/index.js';
import { Pregeneration } from '../../src/fleet/index.js';
import type { Dataplane, GenerationInput, Held, MeshResources } from '../../src/mesh/index.js';
import { SessionScheduler } from '../../src/sessions/index.js';
import { MemoryEventLog } from '../../src/store/index.js';
import { encodeCount } from '../../src/xds/encode.js';
import { CLUSTER, LISTENER, SECRET } from '../../src/xds/type-urls.js';
import { AdsStream } from '../support/ads-client.js';

/** A stored dataplane as the projection holds it: a new object for each write. */
const stored = (name: string) => ({ resource: { type: 'Dataplane', mesh: 'default', name } }) as unknown as Held<Dataplane>;

function projection(revision: number, meshes: Record<string, ReadonlyMap<string, Held<Dataplane>>>): GenerationInput {
  const states = new Map<string, MeshResources>();
  for (const [mesh, dataplanes] of Object.entries(meshes)) states.set(mesh, { mesh: { resource: { type: 'Mesh', name: mesh } } as MeshResources['mesh'], dataplanes, authorities: new Map(), tls: new Map() });
  return { revision, meshes: states };
}

/** A pregeneration whose idle lane runs when the test says, recording the nodes generated. */
function recorded() {
  let deferred: Array<() => void> = [];
  const scheduler = new SessionScheduler({ defer: (turn) => deferred.push(turn) });
  const generated: string[] = [];
  let counted = 0;
  const pregeneration = new Pregeneration({ generate: (node) => generated.push(node), scheduler, generated: () => counted++ });
  const idle = () => {
    while (deferred.length > 0) for (const turn of deferred.splice(0)) turn();
  };
  return { pregeneration, scheduler, generated, counted: () => counted, idle };
}

describe('pregeneration: every dataplane generated once per write, in the idle lane', () => {
  it('generates each dataplane of every mesh once, and again only once it is written again', () => {
    const { pregeneration, generated, counted, idle } = recorded();
    const a = stored('a');
    const b = stored('b');
    const other = new Map([['c', stored('c')]]);
    pregeneration.follow(projection(1, { default: new Map([['a', a], ['b', b]]), other }));
    idle();
    expect(generated.sort()).toEqual(['default.a', 'default.b', 'other.c']);
    expect(counted()).toBe(3);

    // `b` written again, `d` added: only they are generated; the unchanged mesh is not even looked into.
    generated.length = 0;
    pregeneration.follow(projection(2, { default: new Map([['a', a], ['b', stored('b')], ['d', stored('d')]]), other }));
    idle();
    expect(generated.sort()).toEqual(['default.b', 'default.d']);

    // A projection with nothing new generates nothing.
    generated.length = 0;
    pregeneration.follow(projection(3, { default: new Map([['a', a]]), other }));
    idle();
    expect(generated).toEqual([]);
  });

  it('generates a dataplane listed by two projections before its turn came once', () => {
    const { pregeneration, generated, idle } = recorded();
    const a = stored('a');
    pregeneration.follow(projection(1, { default: new Map([['a', a]]) }));
    pregeneration.follow(projection(2, { default: new Map([['a', a]]) }));
    idle();
    expect(generated).toEqual(['default.a']);
  });

  it('looks through the newest projection once a sweep is done, not through every projection a bulk apply makes', () => {
    const { pregeneration, scheduler, generated, idle } = recorded();
    let listed = 0;
    const schedule = scheduler.schedule.bind(scheduler);
    scheduler.schedule = (items, work, lane) => {
      if (lane === 'idle') listed += items.filter((item) => typeof item === 'string').length;
      schedule(items, work, lane);
    };
    // A request keeps the idle lane waiting while 50 projections arrive, each with one more dataplane.
    scheduler.schedule([0], () => {
      const dataplanes = new Map<string, Held<Dataplane>>();
      for (let revision = 1; revision <= 50; revision++) {
        dataplanes.set(`dp-${revision}`, stored(`dp-${revision}`));
        pregeneration.follow(projection(revision, { default: new Map(dataplanes) }));
      }
    }, 'requests');
    idle();
    expect(generated).toHaveLength(50);
    expect(new Set(generated).size).toBe(50);
    // Looked through once the idle lane runs, the newest projection only: not 1 + 2 + … + 50.
    expect(listed).toBe(50);
  });

  it('generates at once what a starting instance has time for, and the rest in the idle lane', () => {
    let clock = 0;
    let deferred: Array<() => void> = [];
    const scheduler = new SessionScheduler({ defer: (turn) => deferred.push(turn) });
    const generated: string[] = [];
    // Each generation takes 1 ms of the clock.
    const pregeneration = new Pregeneration({ generate: (node) => (generated.push(node), (clock += 1)), scheduler, now: () => clock });
    const dataplanes = new Map(Array.from({ length: 10 }, (_, i) => [`dp-${i}`, stored(`dp-${i}`)] as const));
    // Called from a request's work, so the idle lane cannot start within the call.
    const atOnce: string[] = [];
    scheduler.schedule(
      [0],
      () => {
        pregeneration.first(projection(1, { default: dataplanes }), 4);
        atOnce.push(...generated);
      },
      'requests',
    );
    expect(atOnce).toEqual(['default.dp-0', 'default.dp-1', 'default.dp-2', 'default.dp-3']);
    while (deferred.length > 0) for (const turn of deferred.splice(0)) turn();
    expect(generated).toHaveLength(10);
    expect(new Set(generated).size).toBe(10);
    // What it generated is not listed again.
    generated.length = 0;
    pregeneration.follow(projection(2, { default: new Map(dataplanes) }));
    while (deferred.length > 0) for (const turn of deferred.splice(0)) turn();
    expect(generated).toEqual([]);
  });

  it('waits while requests wait, and goes on once they are answered', () => {
    const { pregeneration, scheduler, generated, idle } = recorded();
    const answered: string[] = [];
    // Work in a more urgent lane scheduled first holds the idle lane back until it has run.
    scheduler.schedule(['request'], (request) => answered.push(`${request}, ${generated.length} generated`), 'requests');
    pregeneration.follow(projection(1, { default: new Map([['a', stored('a')]]) }));
    idle();
    expect(answered).toEqual(['request, 0 generated']);
    expect(generated).toEqual(['default.a']);
  });
});

const dataplane = (name: string, port: number) => ({
  type: 'Dataplane',
  mesh: 'default',
  name,
  networking: { address: '127.0.0.1', inbound: [{ port, tags: { service: name } }], outbound: [{ port: port + 1000, service: 'web' }] },
});

async function pregenerations(cp: ControlPlane): Promise<number> {
  const text = await cp.metrics.text();
  return Number(/^chancery_pregenerations_total (\d+)$/m.exec(text)?.[1]);
}

async function certificatesIssued(cp: ControlPlane): Promise<number> {
  const text = await cp.metrics.text();
  return Number(/^chancery_certificates_issued_total (\d+)$/m.exec(text)?.[1]);
}

/** Enabling mTLS makes the mesh's CA in the background: the turns until it is stored. */
async function untilAuthority(cp: ControlPlane): Promise<void> {
  for (let turn = 0; turn < 10_000 && cp.list('CertificateAuthority', 'default').length === 0; turn++) await new Promise((resolve) => setImmediate(resolve));
}

async function untilIdle(cp: ControlPlane, expected: number): Promise<number> {
  // The idle lane runs over later turns of the event loop: wait on them, not on a clock.
  for (let turn = 0; turn < 1_000 && (await pregenerations(cp)) < expected; turn++) await new Promise((resolve) => setImmediate(resolve));
  return pregenerations(cp);
}

describe('a control plane generating ahead of its nodes', () => {
  it('generates the dataplanes in its store at start and those written after, and counts them', async () => {
    const logger = pino({ level: 'silent' });
    const cp = createControlPlane({ store: 'memory', xdsAddress: '127.0.0.1:0', apiAddress: false, logger });
    await cp.start();
    try {
      for (let i = 0; i < 20; i++) await cp.apply(dataplane(`dp-${i}`, 10_000 + i));
      expect(await untilIdle(cp, 20)).toBe(20);
      // Rewritten: generated again; unchanged ones are not.
      await cp.apply({ ...dataplane('dp-3', 10_003), networking: { ...dataplane('dp-3', 10_003).networking, address: '127.0.0.2' } });
      expect(await untilIdle(cp, 21)).toBe(21);
      await cp.apply(dataplane('dp-3', 10_003));
      await cp.delete({ type: 'Dataplane', mesh: 'default', name: 'dp-4' });
      expect(await untilIdle(cp, 22)).toBe(22);
    } finally {
      await cp.stop();
    }
  });

  it('has generated the dataplanes already in its store once it has started, before its first node connects', async () => {
    const log = new MemoryEventLog();
    const logger = pino({ level: 'silent' });
    const first = createControlPlane({ store: log, xdsAddress: '127.0.0.1:0', apiAddress: false, logger });
    await first.start();
    for (let i = 0; i < 30; i++) await first.apply(dataplane(`dp-${i}`, 10_000 + i));
    await first.stop();
    // A restart on the same store: its fleet reconnects at once.
    const restarted = createControlPlane({ store: log, xdsAddress: '127.0.0.1:0', apiAddress: false, logger });
    await restarted.start();
    try {
      expect(await pregenerations(restarted)).toBe(30);
    } finally {
      await restarted.stop();
    }
  });

  it('issues each dataplane of a mesh with mTLS its certificate ahead, and serves its node with it, signing and encoding nothing more', async () => {
    const cp = createControlPlane({ store: 'memory', xdsAddress: '127.0.0.1:0', apiAddress: false, logger: pino({ level: 'silent' }) });
    await cp.start();
    const stream = AdsStream.open(cp.addresses.xds);
    try {
      await cp.apply({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', mtls: { mode: 'strict' } });
      await untilAuthority(cp);
      for (let i = 0; i < 3; i++) await cp.apply(dataplane(`dp-${i}`, 10_000 + i));
      await cp.pregenerated();
      expect(await certificatesIssued(cp)).toBe(3);
      const encodedAhead = encodeCount();

      stream.send({ typeUrl: CLUSTER, nodeId: 'default.dp-1' });
      stream.ack(await stream.nextResponse());
      stream.send({ typeUrl: LISTENER });
      stream.ack(await stream.nextResponse());
      stream.send({ typeUrl: SECRET, resourceNames: ['mtls:identity', 'mtls:trust:default'] });
      const secrets = await stream.nextResponse();
      const identity = secrets.resources.find((secret) => secret['name'] === 'mtls:identity') as { tls_certificate: { certificate_chain: { inline_string: string } } };
      const served = new X509Certificate(identity.tls_certificate.certificate_chain.inline_string);
      expect(served.subjectAltName).toBe('URI:spiffe://default/dp-1');
      expect(cp.session('default.dp-1')?.certificate?.serial).toBe(served.serialNumber.toLowerCase());
      expect(await certificatesIssued(cp)).toBe(3);
      // Its listeners, clusters and Secrets were encoded ahead, with the certificate it was then handed.
      expect(encodeCount() - encodedAhead).toBe(0);
    } finally {
      stream.close();
      await cp.stop();
    }
  });

  it('generates nothing ahead with pregenerate: false', async () => {
    const cp = createControlPlane({ store: 'memory', xdsAddress: '127.0.0.1:0', apiAddress: false, logger: pino({ level: 'silent' }), pregenerate: false });
    await cp.start();
    try {
      for (let i = 0; i < 5; i++) await cp.apply(dataplane(`dp-${i}`, 10_000 + i));
      for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(await pregenerations(cp)).toBe(0);
    } finally {
      await cp.stop();
    }
  });
});
