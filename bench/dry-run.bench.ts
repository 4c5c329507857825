/**
 * Change safety (issue 31): a dry run of a write that touches every node of the fleet, through
 * the HTTP API (`PUT …?dryRun=true`) of a control plane holding `--nodes` dataplanes, and the
 * event loop's delay while it runs (the sessions' work waits that long at most).
 *
 *   npm run bench -- dry-run [--nodes 10000] [--services 50] [--runs 5]
 *
 * The write is one more endpoint of the service every node calls (mesh-shape.ts `hubEndpoint`):
 * every node's EDS changes. The first run generates the fleet's current configuration too (no
 * session has yet); later runs find it generated, as a running fleet's sessions leave it.
 * Target: the answer, with its summary and the first page of nodes, in under 2 s at 10,000 nodes.
 *
 * Then the write itself, and its rollout (`GET /revisions/{R}`) asked for a few times: the first
 * works out the nodes the write changed, the later ones read only where they are (no sessions
 * here: every node is connected nowhere, the cheapest case of the read).
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import type { PreviewAnswer, RolloutAnswer } from '../src/changes/index.js';
import { createControlPlane } from '../src/index.js';
import { validate, type Resource, type Valid } from '../src/mesh/index.js';
import { integerOption } from './support/integer-option.js';
import { dataplane, hubEndpoint, MESH, type MeshShape } from './support/mesh-shape.js';
import { printTable } from './support/print-table.js';
import { spread } from './support/stats.js';

export default async function run(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({ args: [...argv], options: { nodes: { type: 'string', default: '10000' }, services: { type: 'string', default: '50' }, runs: { type: 'string', default: '5' } } });
  const shape: MeshShape = { nodes: integerOption('nodes', values.nodes, 1, 100_000), services: integerOption('services', values.services, 1, 1_000) };
  const runs = integerOption('runs', values.runs, 1, 100);
  const cp = createControlPlane({ xdsAddress: '127.0.0.1:0', apiAddress: '127.0.0.1:0', store: 'memory', logger: pino({ level: 'warn' }), pregenerate: false });
  await cp.start();
  try {
    const resources: Valid<Resource>[] = [];
    for (let index = 0; index < shape.nodes; index++) {
      const result = validate(dataplane(index, shape));
      if (!result.ok) throw new Error(`dataplane ${index}: ${JSON.stringify(result.issues)}`);
      resources.push(result.resource);
    }
    for (let at = 0; at < resources.length; at += 1_000) await cp.store.write(resources.slice(at, at + 1_000).map((resource) => ({ kind: 'upserted' as const, resource })));

    const rows: string[][] = [];
    const times: number[] = [];
    for (let attempt = 1; attempt <= runs; attempt++) {
      const endpoint = hubEndpoint(attempt) as { name: string };
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const started = performance.now();
      const response = await fetch(`http://${cp.addresses.api}/meshes/${MESH}/dataplanes/${endpoint.name}?dryRun=true`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(endpoint),
      });
      const answer = (await response.json()) as PreviewAnswer;
      const ms = performance.now() - started;
      delay.disable();
      if (response.status !== 200) throw new Error(`dry run answered ${response.status}: ${JSON.stringify(answer)}`);
      times.push(ms);
      rows.push([
        String(attempt),
        ms.toFixed(0),
        String(answer.summary.nodesAffected),
        String(answer.summary.nodesUnchanged),
        String(answer.nodes.items.length),
        (delay.max / 1e6).toFixed(1),
        (delay.percentile(99) / 1e6).toFixed(1),
      ]);
    }
    printTable(
      `Dry run of one hub endpoint more, ${shape.nodes} nodes, ${shape.services} services (memory store, no sessions)`,
      ['run', 'answer ms', 'nodes affected', 'unchanged', 'nodes in page', 'loop delay max ms', 'loop delay p99 ms'],
      rows,
    );
    const { p50, max } = spread(times);
    console.log(`\nanswer: p50 ${p50.toFixed(0)} ms, max ${max.toFixed(0)} ms (target under 2000 ms)`);

    const endpoint = hubEndpoint(runs + 1) as { name: string };
    const written = await fetch(`http://${cp.addresses.api}/meshes/${MESH}/dataplanes/${endpoint.name}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(endpoint),
    });
    const revision = written.headers.get('chancery-revision');
    const polls: string[][] = [];
    for (let poll = 1; poll <= 4; poll++) {
      const started = performance.now();
      const rollout = (await (await fetch(`http://${cp.addresses.api}/revisions/${revision}`)).json()) as RolloutAnswer;
      polls.push([String(poll), (performance.now() - started).toFixed(0), String(rollout.nodes.affected), String(rollout.nodes.notConnected)]);
    }
    printTable(`GET /revisions/${revision} after the write, ${shape.nodes} nodes`, ['ask', 'answer ms', 'affected', 'not connected'], polls);
  } finally {
    await cp.stop();
  }
}
