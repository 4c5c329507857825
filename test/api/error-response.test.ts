import { afterEach, describe, expect, it } from 'vitest';
import { ERROR_STATUS, errorResponse } from '../../src/api/index.js';
import { StoreRejectedWriteError } from '../../src/store/index.js';
import { type ApiHarness, dataplaneBody, fakeSessions, putJson, startApi } from './api-harness.js';

const LIMITS = { bodyLimit: 1, maxPathSegment: 256 };

let api: ApiHarness | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

describe('errorResponse', () => {
  it('maps every code to a 4xx or 5xx status', () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect(code).toMatch(/^CHANCERY_(API|STORE|IDENTITY|CHANGES)_[A-Z_]+$/);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
    }
  });

  it('answers an unknown error with 500 and keeps its message out of the body', () => {
    const { status, body, unexpected } = errorResponse(new Error('secret connection string'), LIMITS);
    expect({ status, unexpected }).toEqual({ status: 500, unexpected: true });
    expect(body.code).toBe('CHANCERY_API_INTERNAL');
    expect(JSON.stringify(body)).not.toContain('secret');
  });

  it('answers a write the database refused as data with 500, a bug to log, never a 503 to retry', () => {
    const { status, body, unexpected } = errorResponse(new StoreRejectedWriteError('appending 1 events'), LIMITS);
    expect({ status, code: body.code, unexpected }).toEqual({ status: 500, code: 'CHANCERY_STORE_REJECTED_WRITE', unexpected: true });
  });

  it('answers 500 for a failing handler and logs the error with its stack', async () => {
    api = await startApi({
      sessions: {
        ...fakeSessions([]),
        inOrder: () => {
          throw new Error('registry exploded');
        },
      },
    });
    const response = await fetch(`${api.url}/sessions`);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ code: 'CHANCERY_API_INTERNAL', reason: 'internal error; the server log has the details' });
    const logged = api.logs.find((line) => line.msg === 'request failed');
    expect(logged?.err).toMatchObject({ message: 'registry exploded' });
  });

  it('answers 503 when the store is unavailable', async () => {
    api = await startApi();
    await api.store.close();
    const response = await putJson(`${api.url}/meshes/default/dataplanes/backend-1`, dataplaneBody('backend-1'));
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ code: 'CHANCERY_STORE_UNAVAILABLE' });
  });
});
