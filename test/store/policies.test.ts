import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { NEVER } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { validate } from '../../src/mesh/validate.js';
import type { Resource, Valid } from '../../src/mesh/resources.js';
import type { Policy } from '../../src/policies/index.js';
import { PgliteClient } from '../../src/store/pglite-client.js';
import { checkpointOf, projectionOf } from '../../src/store/projection.js';
import { createResourceStore } from '../../src/store/resource-store.js';
import { SqlEventLog } from '../../src/store/sql-event-log.js';
import { dataplane, mesh } from './fixtures.js';

const EXAMPLES = path.resolve(import.meta.dirname, '../fixtures/kuma-examples');

function valid(input: unknown): Valid<Resource> {
  const result = validate(input);
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.resource;
}

/** Kuma's examples, and policies whose zeros (a weight of 0, no retries) must be kept as written. */
const policies = (): Valid<Policy>[] => [
  ...readdirSync(EXAMPLES).map((file) => valid(parse(readFileSync(path.join(EXAMPLES, file), 'utf8'))) as Valid<Policy>),
  valid({
    type: 'MeshHTTPRoute',
    mesh: 'default',
    name: 'all-to-v1',
    spec: {
      targetRef: { kind: 'Mesh' },
      to: [
        {
          targetRef: { kind: 'MeshService', name: 'echo' },
          rules: [
            {
              matches: [{ path: { type: 'Exact', value: '/' }, method: 'GET', headers: [{ type: 'Present', name: 'x-canary' }, { name: 'x-user', value: '' }] }],
              default: {
                backendRefs: [
                  { kind: 'MeshServiceSubset', name: 'echo', tags: { version: 'v1' }, weight: 100 },
                  { kind: 'MeshServiceSubset', name: 'echo', tags: { version: 'v2' }, weight: 0 },
                ],
              },
            },
          ],
        },
      ],
    },
  }) as Valid<Policy>,
  valid({
    type: 'MeshRetry',
    mesh: 'default',
    name: 'no-retries',
    spec: {
      targetRef: { kind: 'MeshSubset', tags: { app: 'frontend' } },
      to: [{ targetRef: { kind: 'Mesh' }, default: { grpc: { numRetries: 0, backOff: { baseInterval: '25ms' } } } }],
    },
  }) as Valid<Policy>,
  valid({
    type: 'MeshCircuitBreaker',
    mesh: 'default',
    name: 'outliers',
    spec: {
      targetRef: { kind: 'Mesh' },
      to: [
        {
          targetRef: { kind: 'Mesh' },
          default: { outlierDetection: { maxEjectionPercent: 0, detectors: { successRate: { standardDeviationFactor: '1.9' }, failurePercentage: { threshold: 0 } } } },
        },
      ],
    },
  }) as Valid<Policy>,
];

describe('policies in the store', () => {
  let client: PgliteClient;
  beforeAll(async () => {
    client = await PgliteClient.open();
  });
  afterAll(async () => {
    await client.close();
  });

  it('reads every policy back from PGlite exactly as validated, zeros included, after a restart', async () => {
    const written = policies();
    const first = createResourceStore(await SqlEventLog.open(client, { ownsClient: false }), { instance: 'cp-1', resync: NEVER });
    await first.start();
    for (const policy of written) await first.put(policy);
    await first.close();

    const second = createResourceStore(await SqlEventLog.open(client, { ownsClient: false }), { instance: 'cp-2', resync: NEVER });
    await second.start();
    for (const policy of written) expect(second.get({ type: policy.type, mesh: 'default', name: policy.name })?.resource).toEqual(policy);
    expect(second.list('MeshHTTPRoute', 'default').map(({ resource }) => resource.name)).toEqual(['all-to-v1', 'http-route-1', 'route-to-backend-v2']);
    await second.close();
  });

  it('keeps a mesh’s policies one object while only its dataplanes change, and folds them into a checkpoint and back', async () => {
    const store = createResourceStore(await SqlEventLog.open(client, { ownsClient: false }), { instance: 'cp-3', resync: NEVER });
    await store.start();
    await store.put(mesh('fold'));
    for (const policy of policies()) await store.put({ ...policy, mesh: 'fold' } as Valid<Policy>);
    const before = store.projection.meshes.get('fold')!.policies;
    await store.put(dataplane('fold', 'a'));
    expect(store.projection.meshes.get('fold')!.policies).toBe(before);

    const again = projectionOf(checkpointOf(store.projection));
    expect([...again.meshes.get('fold')!.policies!.keys()].sort()).toEqual([...before!.keys()].sort());

    await store.delete({ type: 'MeshRetry', mesh: 'fold', name: 'no-retries' });
    expect(store.projection.meshes.get('fold')!.policies!.has('MeshRetry/no-retries')).toBe(false);
    await store.close();
  });
});
