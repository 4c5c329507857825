import { afterEach, describe, expect, it } from 'vitest';
import { resourceChanges, revertWrites } from '../../src/changes/index.js';
import type { Resource, Valid } from '../../src/mesh/index.js';
import { asSeq, checkpointOf, type Projection } from '../../src/store/index.js';
import { runCli } from '../cli/cli-harness.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
afterEach(async () => {
  await harness.stop();
});

const cli = (...args: string[]) => runCli(args, { env: { CHANCERY_API_ADDRESS: harness.api } });
const configuration = (projection: Projection) =>
  checkpointOf(projection)
    .resources.filter(({ resource }) => resource.type === 'Mesh' || resource.type === 'Dataplane')
    .map(({ resource }) => resource)
    .sort((a, b) => `${a.type}/${a.name}`.localeCompare(`${b.type}/${b.name}`));

/** Revision R: Mesh payments with ledger-1, default with echo-1 and echo-2. Then: echo-1 moved, echo-2 deleted, echo-3 and Mesh orders created, ledger-1 moved. */
async function history(): Promise<number> {
  harness = await startHarness();
  await harness.cp.apply({ type: 'Mesh', name: 'payments' });
  await harness.cp.apply(backendDataplane('ledger-1', 10001, 'ledger', 'payments'));
  await harness.cp.apply(backendDataplane('echo-1', 10001, 'echo'));
  await harness.cp.apply(backendDataplane('echo-2', 10002, 'echo'));
  const revision = harness.cp.store.projection.revision;
  await harness.cp.apply(backendDataplane('echo-1', 10011, 'echo'));
  await harness.cp.delete({ type: 'Dataplane', mesh: 'default', name: 'echo-2' });
  await harness.cp.apply(backendDataplane('echo-3', 10003, 'echo'));
  await harness.cp.apply({ type: 'Mesh', name: 'orders' });
  await harness.cp.apply(backendDataplane('ledger-1', 10009, 'ledger', 'payments'));
  // A status Chancery writes itself: never reverted, nor shown as a difference.
  const status = { type: 'DataplaneTls', mesh: 'default', name: 'echo-1', issuer: '', trusts: [], inbound: 'plaintext' };
  await harness.cp.store.put(status as unknown as Valid<Resource>);
  return revision;
}

describe('revertWrites and resourceChanges', () => {
  it('write back what differs, each conditional on the version held now, members deleted before their mesh', async () => {
    const revision = await history();
    const then = await harness.cp.store.projectionAt(asSeq(revision));
    const now = harness.cp.store.projection;
    expect(resourceChanges(then, now).map(({ key, change }) => `${change} ${key.type} ${key.mesh}/${key.name}`)).toEqual([
      'created Mesh orders/orders',
      'changed Dataplane default/echo-1',
      'deleted Dataplane default/echo-2',
      'created Dataplane default/echo-3',
      'changed Dataplane payments/ledger-1',
    ]);
    expect(revertWrites(then, now).map((write) => [write.kind, write.kind === 'upserted' ? write.resource.name : write.key.name, write.expected])).toEqual([
      ['upserted', 'echo-1', 2],
      ['upserted', 'echo-2', 'absent'],
      ['upserted', 'ledger-1', 2],
      ['deleted', 'echo-3', 1],
      ['deleted', 'orders', 1],
    ]);
    expect(revertWrites(then, now, 'payments').map((write) => (write.kind === 'upserted' ? write.resource.name : write.key.name))).toEqual(['ledger-1']);
  });
});

describe('chancery revert and chancery diff', () => {
  it('shows the differences, previews the revert writing nothing, then writes it as one change and finds nothing left to revert', async () => {
    const revision = await history();
    const head = harness.cp.store.projection.revision;
    const diff = await cli('diff', '--from', String(revision), '--mesh', 'default');
    expect(diff.code).toBe(0);
    expect(diff.stdout).toContain(`--- Dataplane default/echo-1 @ ${revision}\n+++ Dataplane default/echo-1 @ ${head}\n`);
    expect(diff.stdout).toContain('-        "port": 10001,\n');
    expect(diff.stdout).toContain(`--- Dataplane default/echo-3 @ ${revision} (absent)\n`);

    const preview = await cli('revert', '--to-revision', String(revision), '--dry-run');
    expect(preview.stdout).toContain('Dataplane default/echo-2 would be created\n');
    expect(harness.cp.store.projection.revision).toBe(head);

    const { code, stdout } = await cli('revert', '--to-revision', String(revision));
    expect(code).toBe(0);
    expect(stdout).toBe(
      ['Dataplane default/echo-1 configured', 'Dataplane default/echo-2 created', 'Dataplane payments/ledger-1 configured', 'Dataplane default/echo-3 deleted', 'Mesh orders deleted', ''].join('\n'),
    );
    const events = await harness.cp.store.readEvents(asSeq(head), 100);
    expect(events).toHaveLength(5);
    expect(new Set(events.map((event) => event.at)).size).toBe(1);
    expect(configuration(harness.cp.store.projection)).toEqual(configuration(await harness.cp.store.projectionAt(asSeq(revision))));
    expect(await cli('revert', '--to-revision', String(revision))).toMatchObject({ code: 0, stdout: `Nothing differs from revision ${revision}: nothing was written.\n` });
    expect((await cli('diff', '--from', String(revision))).stdout).toBe(`Nothing differs between revisions ${revision} and ${harness.cp.store.projection.revision}.\n`);
  });

  it('reverts only the mesh it is given', async () => {
    const revision = await history();
    expect((await cli('revert', '--to-revision', String(revision), '--mesh', 'payments')).stdout).toBe('Dataplane payments/ledger-1 configured\n');
    expect(harness.cp.list('Dataplane', 'default').map((stored) => stored.resource.name)).toEqual(['echo-1', 'echo-3']);
  });

  it('refuses a revision whose history was compacted with 410, writing nothing', async () => {
    harness = await startHarness({ retention: { events: 2 } });
    await harness.cp.apply(backendDataplane('echo-1', 10001, 'echo'));
    const revision = harness.cp.store.projection.revision;
    for (const port of [10002, 10003, 10004]) await harness.cp.apply(backendDataplane('echo-1', port, 'echo'));
    await harness.cp.store.compact();
    const head = harness.cp.store.projection.revision;
    const { code, stderr } = await cli('revert', '--to-revision', String(revision));
    expect(code).toBe(1);
    expect(stderr).toContain('CHANCERY_STORE_REVISION_COMPACTED (HTTP 410)');
    expect(harness.cp.store.projection.revision).toBe(head);
  });
});
