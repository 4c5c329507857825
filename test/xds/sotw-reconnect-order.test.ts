import { describe, expect, it } from 'vitest';
import { CLUSTER, ENDPOINT, LISTENER, type TypeUrl } from '../../src/xds/index.js';
import { envoyHandshake } from '../support/envoy-handshake.js';
import { harnessFor } from '../support/harness-for.js';
import { eventually } from '../support/traffic.js';
import { ScriptedLog } from '../store/scripted-log.js';
import { BACKEND, envoyDataplane, namesOf, sessionIn, settle } from './fixtures.js';

/**
 * I5 on the first push of a reconnecting SotW stream: a node back with configuration asks for
 * every type it holds before anything is pushed (the session reads the store to its end first),
 * so the push that answers them all must still go CDS, then EDS, then LDS, whatever order the
 * requests came in. The store's catch-up is held until every request is recorded, so all of
 * them meet one push.
 */

const NODE = 'default.web-1';
const CHANGED = { outbound: [{ port: 20001, service: 'backend' }, { port: 20002, service: 'payments' }] };

let log: ScriptedLog;
const harness = harnessFor(() => ({ store: (log = new ScriptedLog()), resources: [BACKEND, envoyDataplane('web-1')] }));

describe('I5 make before break on a reconnecting SotW stream’s first push', () => {
  it.each([
    ['Envoy', [CLUSTER, ENDPOINT, LISTENER]],
    ['a client asking for listeners first', [LISTENER, ENDPOINT, CLUSTER]],
  ] satisfies Array<[string, TypeUrl[]]>)('pushes CDS, then EDS, then LDS to a node back holding configuration, asked in the order of %s', async (_who, order) => {
    // Served as Envoy is, and ACKing: it holds this configuration when its stream breaks.
    const first = harness.streams.sotw();
    const { clusters, endpoints, listeners } = await envoyHandshake(first, NODE);
    first.close();
    await sessionIn(harness.cp, NODE, 'disconnected');

    // While it is away its outbounds change: its clusters and listeners differ from what it holds.
    await harness.cp.apply(envoyDataplane('web-1', CHANGED));
    const release = log.hold();
    const again = harness.streams.sotw();
    const held: Record<string, { versionInfo: string; resourceNames?: string[] }> = {
      [CLUSTER]: { versionInfo: clusters.versionInfo },
      [ENDPOINT]: { versionInfo: endpoints.versionInfo, resourceNames: ['backend'] },
      [LISTENER]: { versionInfo: listeners.versionInfo },
    };
    order.forEach((typeUrl, i) => again.send({ typeUrl, ...held[typeUrl], ...(i === 0 && { nodeId: NODE }) }));
    await eventually('every request recorded while the store is read', () => {
      const view = harness.cp.session(NODE);
      return view?.step === 'catching-up' && ['CDS', 'EDS', 'LDS'].every((type) => view.types[type] !== undefined);
    });
    release();

    const pushed = await settle(again);
    expect(pushed.map((response) => response.typeUrl)).toEqual([CLUSTER, ENDPOINT, LISTENER]);
    expect(namesOf(pushed[0]!)).toEqual(['backend', 'localhost:9002', 'payments']);
    // Unchanged, and sent again all the same: the clusters just sent finish warming on it.
    expect(pushed[1]!.versionInfo).toBe(endpoints.versionInfo);
    expect(namesOf(pushed[2]!)).toEqual(['inbound:127.0.0.1:10002', 'outbound:127.0.0.1:20001', 'outbound:127.0.0.1:20002']);
  });
});
