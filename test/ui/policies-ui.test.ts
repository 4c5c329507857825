import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataplanes, kuma } from '../mesh/policy-fixtures.js';
import { startHarness, type Harness } from '../support/harness.js';
import { ARTIFACTS, launchBrowser, visit } from './ui-support.js';

let browser: Browser;
let harness: Harness;
let page: Page;

beforeAll(async () => {
  browser = await launchBrowser();
  harness = await startHarness();
  for (const { resource } of dataplanes()) await harness.cp.apply(resource);
  await harness.cp.apply(kuma('meshhttproute-split.yaml'));
  await harness.cp.apply(kuma('meshtimeout.yaml'));
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
});
afterAll(async () => {
  await page?.close();
  await browser?.close();
  await harness?.stop();
});

describe('the node page’s policies', () => {
  it('shows each outbound’s routes and fields with their sources, as inspect --policies prints them', async () => {
    await visit(page, harness.api, '#/nodes/default.frontend-1');
    const outbound = page.locator('.policies details.outbound[data-service="echo"][data-client="envoy"]');
    await outbound.waitFor();
    const routes = await outbound.locator('table.routes tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)));
    expect(routes).toEqual([
      ['PathPrefix /', 'echo:version=v1 90%, echo:version=v2 10%', 'MeshHTTPRoute http-route-1', '–'],
      ['any other request', 'echo 100%', 'default', '–'],
    ]);
    const timeout = outbound.locator('table.fields tbody tr', { hasText: 'MeshTimeout http.requestTimeout' });
    expect(await timeout.locator('td').allTextContents()).toEqual(['MeshTimeout http.requestTimeout', '1s', 'MeshTimeout timeout-global', '–', 'RouteAction.timeout']);
    await page.screenshot({ path: path.join(ARTIFACTS, 'node-policies.png'), fullPage: true });
  });

  it('shows what a proxyless gRPC client of the node would not get, and why', async () => {
    const grpc = page.locator('.policies details.outbound[data-service="echo"][data-client="grpc"]');
    await grpc.waitFor();
    expect(await grpc.locator('.not-applied li').allTextContents()).toContain(
      'MeshTimeout idleTimeout = 20s (MeshTimeout timeout-global): grpc-js 1.14.1 reads an api_listener idle_timeout as a deadline for every RPC, so none is sent',
    );
  });
});
