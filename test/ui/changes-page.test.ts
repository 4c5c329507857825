import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DecodedResponse } from '../../src/xds/decode.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../src/xds/type-urls.js';
import { AdsStream } from '../support/ads-client.js';
import { backendDataplane, startHarness, type Harness } from '../support/harness.js';
import { envoyDataplane } from '../xds/fixtures.js';
import { ARTIFACTS, launchBrowser, visit } from './ui-support.js';

let browser: Browser;
let harness: Harness;
let page: Page;
let stream: AdsStream;

beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser.close();
});
afterEach(async () => {
  await page.close();
  stream.close();
  await harness.stop();
});

/** web-1's Envoy, ACKing every response: CDS, EDS for backend, LDS. */
async function connectWeb(): Promise<void> {
  stream = AdsStream.open(harness.xds);
  stream.onResponse((response: DecodedResponse) => stream.ack(response, response.typeUrl === ENDPOINT ? ['backend'] : []));
  stream.send({ typeUrl: CLUSTER, nodeId: 'default.web-1' });
  stream.send({ typeUrl: ENDPOINT, resourceNames: ['backend'] });
  stream.send({ typeUrl: LISTENER });
  await stream.until(() => new Set(stream.responses.map((response) => response.typeUrl)).size === 3, 'CDS, EDS and LDS');
}

describe('the Changes page', () => {
  it('lists recent writes with their author and resources, and each rollout as the fleet ACKs it', async () => {
    harness = await startHarness();
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    await harness.cp.apply(envoyDataplane('web-1'));
    await connectWeb();
    const revision = (await harness.cp.apply(backendDataplane('backend-2', 10003))).seq;
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await visit(page, harness.api, '#/changes');

    const row = page.locator(`tr[data-revision="${revision}"]`);
    await row.locator('[data-rollout="complete"]').waitFor();
    expect(await row.locator('td').nth(2).innerText()).toContain('backend-2');
    expect(await row.locator('.rollout-cell').innerText()).toMatch(/1 ACK\s+1 not connected\s+of 2 nodes · complete/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'changes-page.png'), fullPage: true });

    await row.locator('th a').click();
    await page.locator('h1', { hasText: `Revision ${revision}` }).waitFor();
    expect(await page.locator('main').innerText()).toContain('Dataplane default/backend-2');
  });

  it('links a node’s transitions to the write that made the revision they were generated from', async () => {
    harness = await startHarness();
    await harness.cp.apply(backendDataplane('backend-1', 10001));
    const created = await harness.cp.apply(envoyDataplane('web-1'));
    await connectWeb();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await visit(page, harness.api, '#/nodes/default.web-1');
    const link = page.locator('.timeline a.step-write', { hasText: `revision ${created.seq}` });
    await link.first().click();
    await page.locator('h1', { hasText: `Revision ${created.seq}` }).waitFor();
    await page.locator('.rollout').waitFor();
    expect(await page.locator('main').innerText()).toContain('Dataplane default/web-1');
  });
});
