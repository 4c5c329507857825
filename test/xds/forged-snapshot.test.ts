import { describe, expect, it } from 'vitest';
import { generate, validate } from '../../src/mesh/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { DeltaLedger, ForgedSnapshotError, SotwLedger, type Snapshot } from '../../src/xds/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { BACKEND } from './fixtures.js';

async function realSnapshot(): Promise<Snapshot> {
  const store = createMemoryStore({ instance: 'forged' });
  await store.start();
  const parsed = validate(BACKEND);
  if (!parsed.ok) throw new Error('fixture is invalid');
  await store.put(parsed.resource);
  const result = generate('default.backend-1', store.projection);
  await store.close();
  if (!result.ok) throw result.error;
  return result.snapshot;
}

describe('I1 at run time: a Snapshot is a fact, not a shape', () => {
  it('answers from a sealed snapshot, and refuses a copy of it made outside sealSnapshot before anything is sent', async () => {
    const snapshot = await realSnapshot();
    const { ledger } = SotwLedger.open('s1').receive({ protocol: 'sotw', typeUrl: CLUSTER, versionInfo: '', resourceNames: [], responseNonce: '' }, 0);
    expect(ledger.respond(CLUSTER, snapshot, 0).response?.resources.length).toBeGreaterThan(0);

    // Everything a Snapshot has, symbol-keyed brand included, yet not made by sealSnapshot.
    const forged = Object.create(Object.getPrototypeOf(snapshot), Object.getOwnPropertyDescriptors(snapshot)) as typeof snapshot;
    expect(() => ledger.respond(CLUSTER, forged, 0)).toThrow(ForgedSnapshotError);
    expect(() => DeltaLedger.open('s2').receive({ protocol: 'delta', typeUrl: CLUSTER, subscribe: [], unsubscribe: [], initialVersions: {}, responseNonce: '' }, 0).ledger.respond(CLUSTER, forged, 0)).toThrow(ForgedSnapshotError);
    expect(() => ledger.respond(CLUSTER, forged, 0)).toThrow(/not made by sealSnapshot/);
  });
});
