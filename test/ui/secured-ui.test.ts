import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiToken } from '../../src/identity/index.js';
import { CLUSTER } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { OpenStreams } from '../support/open-streams.js';
import { launchBrowser, sessionRow, visit } from './ui-support.js';

/**
 * The UI in front of an API that asks for tokens: the page asks for one, once, and then shows
 * the fleet live, with the streams this instance refused for who they claimed to be.
 */

let browser: Browser;
let harness: Harness;
let page: Page;
let reader: string;
const streams = new OpenStreams(() => harness.xds);

beforeAll(async () => {
  browser = await launchBrowser();
  harness = await startHarness({ apiAuth: 'token' });
  reader = (await issueApiToken(harness.cp.store, { name: 'dashboard', role: 'reader', now: Date.now() })).token;
  await harness.cp.apply({ type: 'Mesh', name: 'secure' });
  await harness.cp.apply(backendDataplane('backend-1', 10001, 'backend', 'secure'));
  await harness.cp.apply(backendDataplane('open-1', 10002));
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
});
afterAll(async () => {
  await page.close();
  streams.closeAll();
  await harness.stop();
  await browser.close();
});

/** A stream whose first request names `node`. */
function streamOf(node: string): AdsStream {
  const stream = streams.sotw();
  stream.send({ typeUrl: CLUSTER, nodeId: node });
  return stream;
}

describe('the UI of a Chancery that asks for API tokens', () => {
  it('asks for a token once, then lists the sessions live and the refused streams with their reasons', async () => {
    await streamOf('default.open-1').nextResponse();
    await streamOf('secure.backend-1').ending();
    const asked: string[] = [];
    page.on('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept(reader);
    });
    await visit(page, harness.api, '#/');
    await sessionRow(page, 'default.open-1', 'serving').waitFor();
    expect(asked).toEqual(['This Chancery asks for an API token (a reader token is enough):']);
    const refused = page.locator('section.refused');
    expect(await refused.locator('[data-refused-total]').textContent()).toBe('1');
    expect(await refused.locator('li[data-node="secure.backend-1"]').getAttribute('data-reason')).toBe('token-missing');
    expect(await refused.locator('li').textContent()).toContain('UNAUTHENTICATED');

    // The live feed, opened with the token, brings a new session without a reload.
    await harness.cp.apply(backendDataplane('open-2', 10003));
    streamOf('default.open-2');
    await sessionRow(page, 'default.open-2', 'serving').waitFor();
    expect(asked).toHaveLength(1);
  });
});
