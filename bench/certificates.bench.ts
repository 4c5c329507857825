/**
 * `npm run bench -- certificates [--n 10000]`: what mesh mTLS costs Chancery's own work, without
 * the network: N dataplanes of one mesh (one outbound and one inbound each) are issued their
 * certificates (what a strict storm adds per node), then generated once each without mTLS and
 * with strict mTLS (what a storm's and a change's generation costs), again once every node's
 * DataplaneTls status is written (what each round of statuses costs), then renewed all at once
 * (a renewal round's CPU, all nodes due together: the worst case). The storm over the network,
 * strict against plaintext in one run, is `npm run bench -- sessions --mesh plain,strict`.
 */
import { performance } from 'node:perf_hooks';
import { newMeshAuthority } from '../src/identity/index.js';
import { generate, validate, type CertificateAuthority, type Dataplane, type DataplaneTls, type Mesh, type Valid } from '../src/mesh/index.js';
import { CertificateKeeper } from '../src/sessions/index.js';
import { asResourceVersion, asSeq, type MeshState, type Projection, type Stored } from '../src/store/index.js';
import { integerOption } from './support/integer-option.js';
import { printTable } from './support/print-table.js';

const stored = <T extends Valid<Mesh | Dataplane | CertificateAuthority | DataplaneTls>>(resource: T, seq: number): Stored<T> =>
  ({ resource, version: asResourceVersion(1), seq: asSeq(seq), updatedAt: '2026-12-05T00:00:00.000Z' }) as Stored<T>;

function valid<T>(input: unknown): Valid<T> {
  const result = validate(input);
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.resource as unknown as Valid<T>;
}

function projectionOf(n: number, mtls: boolean, authority: CertificateAuthority): Projection {
  const mesh = stored(valid<Mesh>({ type: 'Mesh', name: 'default', dataplaneAuth: 'none', ...(mtls && { mtls: { mode: 'strict', certificateTTL: '24h' } }) }), 1);
  const dataplanes = new Map<string, Stored<Dataplane>>();
  for (let i = 0; i < n; i++) {
    const name = `dp-${i}`;
    const address = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    dataplanes.set(name, stored(valid<Dataplane>({ type: 'Dataplane', mesh: 'default', name, networking: { address, inbound: [{ port: 8080, tags: { service: `svc-${i % 100}` } }], outbound: [{ port: 20001, service: `svc-${(i + 1) % 100}` }] } }), i + 2));
  }
  const authorities = new Map(mtls ? [['ca-1', stored(authority as Valid<CertificateAuthority>, n + 2)]] : []);
  const state: MeshState = { mesh, dataplanes, authorities, tls: new Map() };
  return { revision: asSeq(n + 2), meshes: new Map([['default', state]]), credentials: new Map() };
}

/** The projection once every node of its mesh wrote its DataplaneTls status (written by Chancery, never validated as input): holding ca-1, its inbound strict. */
function withStatuses(projection: Projection): Projection {
  const state = projection.meshes.get('default')!;
  const tls = new Map([...state.dataplanes.keys()].map((name, i) => [name, stored(Object.freeze({ type: 'DataplaneTls', mesh: 'default', name, issuer: 'ca-1', trusts: ['ca-1'], inbound: 'strict' }) as unknown as Valid<DataplaneTls>, i)]));
  return { ...projection, revision: asSeq(projection.revision + 1), meshes: new Map([['default', { ...state, tls }]]) };
}

export default async function certificates(argv: readonly string[]): Promise<void> {
  const nAt = argv.indexOf('--n');
  const n = nAt === -1 ? 10_000 : integerOption('n', argv[nAt + 1] ?? '', 1, 100_000);
  const authority = await newMeshAuthority('default', 'ca-1', Date.now());
  const plain = projectionOf(n, false, authority);
  const strict = projectionOf(n, true, authority);
  const nodes = [...plain.meshes.get('default')!.dataplanes.keys()].map((name) => `default.${name}`);
  const keeper = new CertificateKeeper({ projection: () => strict, now: Date.now });

  const timed = async (work: () => Promise<unknown> | unknown): Promise<{ ms: number; cpu: number }> => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    await work();
    const used = process.cpuUsage(cpu);
    return { ms: performance.now() - started, cpu: (used.user + used.system) / 1000 };
  };
  const inParallel = (issue: (node: string) => Promise<unknown>) => async () => {
    for (let i = 0; i < nodes.length; i += 256) await Promise.all(nodes.slice(i, i + 256).map(issue));
  };

  const issued = await timed(inParallel((node) => keeper.issue(node)));
  const withoutMtls = await timed(() => nodes.forEach((node) => generate(node, plain)));
  const withMtls = await timed(() => nodes.forEach((node) => generate(node, strict, keeper.current(node))));
  // What every node of a strict storm goes through once a second: a round of DataplaneTls statuses written.
  const reported = withStatuses(strict);
  const afterStatuses = await timed(() => nodes.forEach((node) => generate(node, reported, keeper.current(node))));
  const renewed = await timed(inParallel((node) => keeper.issue(node)));
  const heap = process.memoryUsage().heapUsed;

  const per = (value: number) => `${((value * 1000) / n).toFixed(0)} µs`;
  printTable(`mesh mTLS, N = ${n} dataplanes of one mesh, without the network`, ['measure', 'wall', 'CPU', 'a node'], [
    ['certificates issued (key, sign, PEM)', `${issued.ms.toFixed(0)} ms`, `${issued.cpu.toFixed(0)} ms`, `${per(issued.cpu)} CPU, ${((n / issued.ms) * 1000).toFixed(0)} a second`],
    ['generate every node, mTLS disabled', `${withoutMtls.ms.toFixed(0)} ms`, `${withoutMtls.cpu.toFixed(0)} ms`, per(withoutMtls.cpu)],
    ['generate every node, strict', `${withMtls.ms.toFixed(0)} ms`, `${withMtls.cpu.toFixed(0)} ms`, per(withMtls.cpu)],
    ['again, after a round of mTLS statuses', `${afterStatuses.ms.toFixed(0)} ms`, `${afterStatuses.cpu.toFixed(0)} ms`, per(afterStatuses.cpu)],
    ['a renewal round, every node at once', `${renewed.ms.toFixed(0)} ms`, `${renewed.cpu.toFixed(0)} ms`, per(renewed.cpu)],
    ['heap after, certificates and keys held', `${(heap / 1048576).toFixed(0)} MB`, '', `${(heap / n / 1024).toFixed(1)} KB`],
  ]);
}
