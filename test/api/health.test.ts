import { afterEach, describe, expect, it } from 'vitest';
import { type ApiHarness, startApi } from './api-harness.js';

let api: ApiHarness;
afterEach(async () => {
  await api.close();
});

describe('health and readiness', () => {
  it('answers /healthz with ok', async () => {
    api = await startApi();
    const response = await fetch(`${api.url}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('answers /readyz with 503 until the store has caught up, then 200', async () => {
    api = await startApi({ startStore: false });
    const before = await fetch(`${api.url}/readyz`);
    expect(before.status).toBe(503);
    expect(await before.json()).toMatchObject({ status: 'not-ready' });

    await api.store.start();
    const after = await fetch(`${api.url}/readyz`);
    expect(after.status).toBe(200);
    expect(await after.json()).toEqual({ status: 'ok' });
  });
});
