import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PreviewAnswer } from '../../src/changes/index.js';
import { asSeq } from '../../src/store/index.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { envoyDataplane } from '../xds/fixtures.js';
import { runCli } from './cli-harness.js';

let harness: Harness;
beforeEach(async () => {
  harness = await startHarness();
  await harness.cp.apply(backendDataplane('backend-1', 10001));
  await harness.cp.apply(envoyDataplane('web-1'));
});
afterEach(async () => {
  await harness.stop();
});

const cli = (args: readonly string[], stdin?: string) => runCli(args, { env: { CHANCERY_API_ADDRESS: harness.api }, ...(stdin !== undefined && { stdin }) });
const BACKEND_2 = 'type: Dataplane\nname: backend-2\nnetworking: { address: 127.0.0.1, inbound: [{ port: 10003, tags: { service: backend } }] }\n';

describe('chancery apply --dry-run', () => {
  it('prints what each resource would be and what each affected node would be sent, and writes nothing', async () => {
    const revision = harness.cp.store.projection.revision;
    const { code, stdout, stderr } = await cli(['apply', '--dry-run', '-f', '-'], BACKEND_2);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toBe(
      [
        `Dry run: nothing was written. The change would follow revision ${revision}.`,
        'Dataplane default/backend-2 would be created',
        '2 nodes affected, 1 unchanged; resources sent: 2 added, 1 changed, 0 removed',
        'NODE                DATAPLANE   CONNECTED   CDS   EDS   LDS   RDS   SDS',
        'default.backend-2   created     -           +1    -     +1    -     -',
        'default.web-1       kept        -           -     ~1    -     -     -',
        '',
      ].join('\n'),
    );
    expect(await harness.cp.store.readEvents(asSeq(revision), 10)).toEqual([]);
  });

  it('prints the whole answer with -o json, and each changed resource as a diff of its JSON with -o diff', async () => {
    const json = await cli(['apply', '--dry-run', '-o', 'json', '-f', '-'], BACKEND_2);
    const answer = JSON.parse(json.stdout) as PreviewAnswer;
    expect(answer.nodes.items.map((node) => node.node)).toEqual(['default.backend-2', 'default.web-1']);
    const diff = await cli(['apply', '--dry-run', '-o', 'diff', '-f', '-'], BACKEND_2);
    expect(diff.code).toBe(0);
    const eds = diff.stdout.slice(diff.stdout.indexOf('--- EDS backend'));
    expect(eds.split('\n').slice(2, 3)).toEqual(['# sent to 1 node: default.web-1']);
    expect(eds).toContain('+                "port_value": 10003');
    expect(diff.stdout).toContain('--- LDS inbound:127.0.0.1:10003 (not sent before)');
  });

  it('refuses -o without --dry-run, and an unknown format, as usage errors', async () => {
    expect((await cli(['apply', '-o', 'json', '-f', '-'], BACKEND_2)).code).toBe(2);
    expect((await cli(['apply', '--dry-run', '-o', 'yaml', '-f', '-'], BACKEND_2)).code).toBe(2);
    expect(harness.cp.list('Dataplane')).toHaveLength(2);
  });
});

describe('chancery delete --dry-run', () => {
  it('prints what deleting would do, and deletes nothing', async () => {
    const { code, stdout } = await cli(['delete', 'dp', 'backend-1', '--dry-run']);
    expect(code).toBe(0);
    expect(stdout).toContain('Dataplane default/backend-1 would be deleted\n');
    expect(stdout).toContain('default.backend-1   deleted');
    expect(harness.cp.list('Dataplane')).toHaveLength(2);
  });
});

describe('chancery apply --fail-on-warnings', () => {
  it('writes a change without warnings as one batch, printing each outcome', async () => {
    const { code, stdout, stderr } = await cli(['apply', '--fail-on-warnings', '-f', '-'], BACKEND_2);
    expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: 'Dataplane default/backend-2 created\n1 resource: 1 created, 0 configured, 0 unchanged, 0 refused\n', stderr: '' });
    expect(harness.cp.list('Dataplane')).toHaveLength(3);
  });
});
