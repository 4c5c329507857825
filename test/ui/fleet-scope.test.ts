import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import type { AdsStream } from '../support/ads-client.js';
import { type FleetInstance, startFleetInstance } from '../support/fleet-instance.js';
import { OpenStreams } from '../support/open-streams.js';
import { BACKEND, envoyDataplane } from '../xds/fixtures.js';
import { ARTIFACTS, connectEnvoy, launchBrowser, NACK_MESSAGE, sessionRow, visit as visitApi } from './ui-support.js';

/**
 * Two instances in one process sharing one store (a MemoryEventLog shares its change feed and
 * session records as Postgres would): the browser opens cp-a's UI; cp-b serves other nodes
 * and saves its records when the test says so. The feed carries cp-a's sessions only, so
 * what the page shows of cp-b comes from the whole-fleet API and the page's periodic refresh.
 */

let browser: Browser;
let page: Page;
let a: FleetInstance;
let b: FleetInstance;
const streams = new OpenStreams();
/** web-1's stream to cp-a, served before each test. */
let web: AdsStream;

beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser.close();
});

beforeEach(async () => {
  const log = new MemoryEventLog();
  a = await startFleetInstance(log, 'cp-a', { apiAddress: '127.0.0.1:0' });
  b = await startFleetInstance(log, 'cp-b');
  await a.cp.apply(BACKEND);
  await a.cp.apply(envoyDataplane('web-1'));
  await a.cp.apply(envoyDataplane('web-2'));
  await a.cp.apply(envoyDataplane('web-3', { inbound: [{ port: 10003, service: 'web' }] }));
  web = await connectEnvoy(open(a), a.cp, 'default.web-1', { endpoints: true });
  await connectEnvoy(open(a), a.cp, 'default.backend-1', { endpoints: false });
  await connectEnvoy(open(b), b.cp, 'default.web-2', { endpoints: true });
  await connectEnvoy(open(b), b.cp, 'default.web-3', { endpoints: true, nack: NACK_MESSAGE });
  b.save.next();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
});
afterEach(async () => {
  await page.close();
  streams.closeAll();
  await a.cp.stop();
  await b.cp.stop();
});

const open = (target: FleetInstance): AdsStream => streams.sotw({ address: target.cp.addresses.xds });

const visit = (hash: string) => visitApi(page, a.cp.addresses.api!, hash);
const row = (node: string, instance: string) => sessionRow(page, node).and(page.locator(`[data-instance="${instance}"]`));

/** Node, instance and the instance column's text of each row, in order. */
function rows(): Promise<string[][]> {
  return page
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-node') ?? '', tr.getAttribute('data-instance') ?? '', tr.querySelector('td.instance-cell')?.textContent ?? '']));
}

describe('the fleet page, scoped to this instance or the whole fleet', () => {
  it('lists the nodes of both instances with their instance once the whole fleet is chosen, from the keyboard', async () => {
    await visit('#/');
    await row('default.web-1', 'cp-a').waitFor();
    await page.locator('#instance').filter({ hasText: 'cp-a' }).waitFor();
    expect((await rows()).map(([node]) => node)).toEqual(['default.backend-1', 'default.web-1']);

    await page.getByLabel('This instance').focus();
    await page.keyboard.press('ArrowRight');
    await row('default.web-3', 'cp-b').waitFor();
    expect(new URL(page.url()).hash).toBe('#/?scope=fleet');
    expect(await page.getByLabel('Whole fleet').isChecked()).toBe(true);

    const listed = await rows();
    expect(listed.map(([node, instance]) => [node, instance])).toEqual([
      ['default.backend-1', 'cp-a'],
      ['default.web-1', 'cp-a'],
      ['default.web-2', 'cp-b'],
      ['default.web-3', 'cp-b'],
    ]);
    // cp-a's sessions are live; cp-b's are as cp-b last saved them.
    for (const [, instance, text] of listed) expect(text).toMatch(instance === 'cp-a' ? /^cp-alive$/ : /^cp-bsaved /);
    expect(await row('default.web-3', 'cp-b').locator('td.type').allTextContents()).toEqual(['ACK', 'ACK', 'NACK', '–']);
    expect(await page.locator('a.count[data-state="serving"] .count-n').textContent()).toBe('4');
    expect(await page.locator('.instances li').evaluateAll((lis) => lis.map((li) => li.textContent))).toEqual([
      'cp-a 2this instance',
      expect.stringMatching(/^cp-b 2seen /),
    ]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-scope.png'), fullPage: true });

    // This instance's rows still follow its live feed.
    web.close();
    await sessionRow(page, 'default.web-1', 'disconnected').waitFor();
  });

  it('filters the whole fleet by instance, offering the live instances with their session counts', async () => {
    await visit('#/?scope=fleet');
    await row('default.web-2', 'cp-b').waitFor();
    const instance = page.getByLabel('Instance', { exact: true });
    await instance.locator('option[value="cp-b"]', { hasText: '2 sessions · seen' }).waitFor({ state: 'attached' });
    expect(await instance.locator('option').allTextContents()).toEqual([
      'All instances',
      'cp-a (this instance) · 2 sessions',
      expect.stringMatching(/^cp-b · 2 sessions · seen /),
    ]);

    await instance.selectOption('cp-b');
    await page.locator('tbody tr').first().and(row('default.web-2', 'cp-b')).waitFor();
    await row('default.web-1', 'cp-a').waitFor({ state: 'detached' });
    expect(new URL(page.url()).hash).toBe('#/?scope=fleet&instance=cp-b');
    expect((await rows()).map(([node, at]) => [node, at])).toEqual([
      ['default.web-2', 'cp-b'],
      ['default.web-3', 'cp-b'],
    ]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-scope-instance.png'), fullPage: true });

    // Back to this instance alone: the filter by another instance goes with the fleet.
    await page.getByLabel('Whole fleet').focus();
    await page.keyboard.press('ArrowLeft');
    await row('default.web-1', 'cp-a').waitFor();
    expect(new URL(page.url()).hash).toBe('#/');
    expect((await rows()).map(([node]) => node)).toEqual(['default.backend-1', 'default.web-1']);
  });
});

describe('the node page across the fleet', () => {
  it('tells the story of a node only the other instance serves, linked from its fleet row', async () => {
    await visit('#/?scope=fleet');
    await row('default.web-2', 'cp-b').getByRole('link', { name: 'default.web-2' }).click();
    expect(new URL(page.url()).hash).toBe('#/nodes/default.web-2');

    const story = page.getByRole('region', { name: /Across the fleet/ });
    await story.locator('.fleet-sessions li[data-instance="cp-b"][data-state="serving"]').waitFor();
    expect(await story.locator('.fleet-sessions li').count()).toBe(1);
    expect(await story.locator('.fleet-sessions li').textContent()).toMatch(/^cp-bservingsaved /);
    const steps = await story.locator('.fleet-timeline li').evaluateAll((lis) =>
      lis.map((li) => [li.getAttribute('data-instance'), li.querySelector('.event')?.textContent, li.querySelector('.move')?.textContent]),
    );
    expect(steps).toEqual([['cp-b', 'stream.opened', 'connecting → serving']]);
    expect(await page.locator('.notice').textContent()).toContain('it is connected to cp-b');
    // This instance has no session of its own to chart.
    expect(await page.locator('figure.chart').isVisible()).toBe(false);
    await page.screenshot({ path: path.join(ARTIFACTS, 'node-fleet.png'), fullPage: true });
  });

  it('adds the story across the fleet to a node this instance serves when another instance serves it too', async () => {
    // The node reconnected to cp-b before cp-a noticed its old connection was dead.
    await connectEnvoy(open(b), b.cp, 'default.web-1', { endpoints: true });
    b.save.next();
    await visit('#/nodes/default.web-1');
    await page.locator('figure.chart svg g.node.current').waitFor();

    const story = page.getByRole('region', { name: /Across the fleet/ });
    await story.locator('.fleet-sessions li[data-instance="cp-b"]').waitFor();
    expect(await story.locator('.fleet-sessions li').evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-instance'), li.getAttribute('data-state')]))).toEqual([
      ['cp-a', 'serving'],
      ['cp-b', 'serving'],
    ]);
    const instances = await story.locator('.fleet-timeline li').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-instance')));
    expect(instances.toSorted()).toEqual(['cp-a', 'cp-b']);
    await page.screenshot({ path: path.join(ARTIFACTS, 'node-fleet-both.png'), fullPage: true });
  });
});
