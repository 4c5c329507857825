import { afterEach, describe, expect, it } from 'vitest';
import { ChangeDesk } from '../../src/changes/index.js';
import { validate, type Resource, type Valid } from '../../src/mesh/index.js';
import { asSeq, createMemoryStore, MemoryEventLog, type ResourceStore } from '../../src/store/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import { runCli } from '../cli/cli-harness.js';
import { AdsStream } from '../support/ads-client.js';
import { startFleetInstance, type FleetInstance } from '../support/fleet-instance.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { eventually } from '../support/traffic.js';
import { envoyDataplane } from '../xds/fixtures.js';

const ECHO_1 = backendDataplane('echo-1', 10001, 'echo');
const ECHO_2 = backendDataplane('echo-2', 10002, 'echo');
const WEB_1 = envoyDataplane('web-1', { inbound: [], outbound: [{ port: 20001, service: 'echo' }] });

const streams: AdsStream[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stream of streams.splice(0)) stream.close();
  for (const stop of stops.splice(0).reverse()) await stop();
});

function connect(address: string, node: string): Promise<unknown> {
  const stream = AdsStream.open(address);
  streams.push(stream);
  stream.send({ typeUrl: CLUSTER, nodeId: node });
  return stream.nextResponse();
}

async function fleet(): Promise<Harness> {
  const harness = await startHarness();
  stops.push(() => harness.stop());
  for (const dataplane of [ECHO_1, ECHO_2, WEB_1]) await harness.cp.apply(dataplane);
  return harness;
}

const cli = (harness: Harness, ...args: string[]) => runCli(args, { env: { CHANCERY_API_ADDRESS: harness.api } });

describe('a write with warnings', () => {
  it('is made, and answers its warnings: Warning headers on the API, lines on stderr from the CLI', async () => {
    const harness = await fleet();
    await connect(harness.xds, 'default.echo-2');
    const first = await cli(harness, 'delete', 'dp', 'echo-1');
    expect(first).toEqual({ code: 0, stdout: 'Dataplane default/echo-1 deleted\n', stderr: '' });
    const response = await fetch(`http://${harness.api}/meshes/default/dataplanes/echo-2`, { method: 'DELETE' });
    expect(response.status).toBe(204);
    expect(response.headers.get('warning')).toBe(
      [
        '299 chancery "service echo in mesh default loses its last endpoint while 1 node call it (default.web-1): their calls will fail"',
        '299 chancery "Dataplane echo-2 in mesh default is deleted while node default.echo-2 is connected (to test): its stream is ended and it keeps the configuration it holds"',
      ].join(', '),
    );
    expect(harness.cp.list('Dataplane').map((stored) => stored.resource.name)).toEqual(['web-1']);
  });

  it('is refused with --fail-on-warnings, naming them, and nothing is stored', async () => {
    const harness = await fleet();
    await connect(harness.xds, 'default.echo-2');
    const revision = harness.cp.store.projection.revision;
    const refused = await cli(harness, 'delete', 'dp', 'echo-2', '--fail-on-warnings');
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Warning: Dataplane echo-2 in mesh default is deleted while node default.echo-2 is connected (to test): its stream is ended and it keeps the configuration it holds\n' +
        'Refused (--fail-on-warnings): nothing was written.\n',
    });
    const api = await fetch(`http://${harness.api}/meshes/default/dataplanes/echo-2?failOnWarnings=true`, { method: 'DELETE' });
    expect(api.status).toBe(409);
    expect(await api.json()).toMatchObject({ code: 'CHANCERY_CHANGES_WARNINGS', warnings: [{ kind: 'connected-dataplane-deleted', node: 'default.echo-2' }] });
    expect(await harness.cp.store.readEvents(asSeq(revision), 10)).toEqual([]);
    // Without a warning, the same flag writes.
    expect(await cli(harness, 'delete', 'dp', 'echo-1', '--fail-on-warnings')).toMatchObject({ code: 0, stdout: 'Dataplane default/echo-1 deleted\n' });
  });

  it('warns of a node connected to another instance sharing the store, from its saved record', async () => {
    const log = new MemoryEventLog();
    const a: FleetInstance = await startFleetInstance(log, 'cp-a', { apiAddress: '127.0.0.1:0' });
    stops.push(() => a.cp.stop());
    const b = await startFleetInstance(log, 'cp-b');
    stops.push(() => b.cp.stop());
    for (const dataplane of [ECHO_1, ECHO_2]) await a.cp.apply(dataplane);
    await connect(b.cp.addresses.xds, 'default.echo-2');
    b.save.next();
    await eventually("cp-b's saved record of default.echo-2", async () => (await a.cp.fleetSessions('default.echo-2')).some((view) => view.instance === 'cp-b'));
    const response = await fetch(`http://${a.cp.addresses.api}/meshes/default/dataplanes/echo-2?failOnWarnings=true`, { method: 'DELETE' });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ warnings: [{ kind: 'connected-dataplane-deleted', node: 'default.echo-2', connectedTo: ['cp-b'] }] });
    expect(a.cp.list('Dataplane')).toHaveLength(2);
  });
});

describe('a write refused on warnings, raced by another write', () => {
  it('is checked again on the revision it would land on: a write made harmful meanwhile is refused', async () => {
    const store = createMemoryStore({ instance: 'cp-1' });
    stops.push(() => store.close());
    await store.start();
    for (const dataplane of [ECHO_1, ECHO_2, WEB_1]) await store.put(valid(dataplane));
    // Between this write's check and its append, another writer deletes echo-1: echo-2 is then the last endpoint.
    let raced = false;
    const plan: ResourceStore['plan'] = async (...args) => {
      const planned = await store.plan(...args);
      if (!raced) {
        raced = true;
        await store.delete({ type: 'Dataplane', mesh: 'default', name: 'echo-1' });
      }
      return planned;
    };
    const racing = new Proxy(store, {
      get: (target, property) => {
        if (property === 'plan') return plan;
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const desk = new ChangeDesk({ store: racing, sessions: { local: () => undefined, saved: async () => [] } });
    const attempt = desk.write([{ kind: 'deleted', key: { type: 'Dataplane', mesh: 'default', name: 'echo-2' } }], { failOnWarnings: true });
    await expect(attempt).rejects.toMatchObject({ code: 'CHANCERY_CHANGES_WARNINGS', warnings: [{ kind: 'service-loses-last-endpoint', service: 'echo' }] });
    expect(store.get({ type: 'Dataplane', mesh: 'default', name: 'echo-2' })).toBeDefined();
  });
});

function valid(input: object): Valid<Resource> {
  const result = validate(input);
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.resource;
}
