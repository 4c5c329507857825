import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueServiceAccount, rotateSigningKey } from '../../src/identity/index.js';
import { asSeq } from '../../src/store/index.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';

/**
 * DESIGN §7: an unknown query parameter is a 400 on every route, naming it, so a parameter a
 * newer server understands (`?dryRun=true`) sent to this one can never be taken as a plain
 * write. One check serves every route (src/api/query-params.ts); this table names each route the
 * API has, with a request it would otherwise answer.
 */
let harness: Harness;
const made: Record<'signingKey' | 'accountKey', string> = { signingKey: '', accountKey: '' };

beforeAll(async () => {
  harness = await startHarness();
  await harness.cp.apply(backendDataplane('backend-1', 10001));
  made.signingKey = (await rotateSigningKey(harness.cp.store, 'default')).resource.name;
  made.accountKey = (await issueServiceAccount(harness.cp.store, { mesh: 'default', name: 'backend-1' })).key.resource.name;
});
afterAll(() => harness.stop());

const DP = '/meshes/default/dataplanes/backend-1';

/**
 * Every route: method, path (`{…}` a key made above) and body. A write route takes `dryRun`
 * (issue 31), so only a parameter it does not take is tried on it.
 */
const ROUTES: ReadonlyArray<{ readonly method: string; readonly path: string; readonly body?: unknown; readonly writes?: true }> = [
  { method: 'GET', path: '/healthz' },
  { method: 'GET', path: '/readyz' },
  { method: 'GET', path: '/metrics' },
  { method: 'GET', path: '/ui' },
  { method: 'GET', path: '/ui/' },
  { method: 'GET', path: '/ui/app.js' },
  { method: 'GET', path: '/meshes' },
  { method: 'GET', path: '/meshes/default' },
  { method: 'HEAD', path: '/meshes/default' },
  { method: 'PUT', path: '/meshes/default', body: { type: 'Mesh', name: 'default', dataplaneAuth: 'token' }, writes: true },
  { method: 'DELETE', path: '/meshes/default', writes: true },
  { method: 'GET', path: '/meshes/default/dataplanes' },
  { method: 'GET', path: DP },
  { method: 'PUT', path: DP, body: backendDataplane('backend-1', 10002), writes: true },
  { method: 'DELETE', path: DP, writes: true },
  { method: 'POST', path: '/apply', body: { items: [backendDataplane('backend-1', 10002)] }, writes: true },
  { method: 'GET', path: '/events' },
  { method: 'GET', path: '/meshes/default/history' },
  { method: 'GET', path: `${DP}/history` },
  { method: 'GET', path: `${DP}/bootstrap` },
  { method: 'POST', path: `${DP}/token`, body: {} },
  { method: 'POST', path: `${DP}/service-account`, body: {} },
  { method: 'GET', path: '/meshes/default/signing-keys' },
  { method: 'POST', path: '/meshes/default/signing-keys', body: {} },
  { method: 'DELETE', path: '/meshes/default/signing-keys/{signingKey}' },
  { method: 'GET', path: '/meshes/default/service-account-keys' },
  { method: 'DELETE', path: '/meshes/default/service-account-keys/{accountKey}' },
  { method: 'GET', path: '/api-tokens' },
  { method: 'POST', path: '/api-tokens', body: { name: 'ci', role: 'reader' } },
  { method: 'DELETE', path: '/api-tokens/ci' },
  { method: 'GET', path: '/sessions' },
  { method: 'GET', path: '/sessions/events' },
  { method: 'GET', path: '/sessions/default.backend-1' },
  { method: 'GET', path: '/sessions/default.backend-1/xds' },
  { method: 'GET', path: '/sessions/default.backend-1/history' },
  { method: 'GET', path: '/instances' },
  { method: 'GET', path: '/statechart' },
  { method: 'GET', path: '/revisions/1' },
  { method: 'POST', path: '/revisions/1/revert', writes: true },
  { method: 'GET', path: '/diff' },
];

const fill = (path: string) => path.replace(/\{(\w+)\}/g, (_, key: 'signingKey' | 'accountKey') => made[key]);

describe('a query parameter a route does not take', () => {
  it.each(ROUTES)('is refused on $method $path with 400 naming it, and nothing is written', async ({ method, path, body, writes }) => {
    for (const parameter of writes ? ['bogus', 'dryrun'] : ['bogus', 'dryRun']) {
      const before = harness.cp.store.projection.revision;
      const response = await fetch(`http://${harness.api}${fill(path)}?${parameter}=true`, {
        method,
        ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
      expect(response.status, `${method} ${path}?${parameter}`).toBe(400);
      if (method !== 'HEAD') {
        expect(await response.json()).toEqual({
          code: 'CHANCERY_API_INVALID_QUERY',
          field: parameter,
          reason: expect.stringMatching(new RegExp(`^unknown query parameter "${parameter}": this route takes `)),
        });
      }
      expect(await harness.cp.store.readEvents(asSeq(before), 10)).toEqual([]);
    }
  });

  it('is named even beside the parameters the route takes', async () => {
    const response = await fetch(`http://${harness.api}/events?limit=5&after=0&lmit=5`);
    expect(await response.json()).toEqual({ code: 'CHANCERY_API_INVALID_QUERY', field: 'lmit', reason: 'unknown query parameter "lmit": this route takes after, limit' });
  });

  it('leaves a path no route has to the 404', async () => {
    const response = await fetch(`http://${harness.api}/nowhere?bogus=1`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'CHANCERY_API_ROUTE_NOT_FOUND' });
  });
});
