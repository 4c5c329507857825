import type { Statechart } from '../../src/machines/index.js';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLUSTER } from '../../src/xds/type-urls.js';
import type { AdsStream } from '../support/ads-client.js';
import { harnessFor } from '../support/harness-for.js';
import { BACKEND, envoyDataplane, sessionIn } from '../xds/fixtures.js';
import { ARTIFACTS, connectEnvoy, launchBrowser, NACK_MESSAGE, sessionRow, visit as visitApi } from './ui-support.js';

let browser: Browser;
let page: Page;
/** The streams of web-1 and backend-1, served before each test. */
let web: AdsStream;
let backend: AdsStream;

beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser.close();
});

const harness = harnessFor({ resources: [BACKEND, envoyDataplane('web-1'), envoyDataplane('web-2', { inbound: [{ port: 10003, service: 'web' }] })] });
beforeEach(async () => {
  web = await connectEnvoy(harness.streams.sotw(), harness.cp, 'default.web-1', { endpoints: true });
  await connectEnvoy(harness.streams.sotw(), harness.cp, 'default.web-2', { endpoints: true, nack: NACK_MESSAGE });
  backend = await connectEnvoy(harness.streams.sotw(), harness.cp, 'default.backend-1', { endpoints: false });
  // No Dataplane: it waits in awaiting-snapshot.
  const waiting = harness.streams.sotw();
  waiting.send({ typeUrl: CLUSTER, nodeId: 'default.ghost-1' });
  await sessionIn(harness.cp, 'default.ghost-1', 'awaiting-snapshot');
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
});
afterEach(async () => {
  await page.close();
});

const visit = (hash: string) => visitApi(page, harness.api, hash);
const row = (node: string, state?: string) => sessionRow(page, node, state);

describe('the fleet page', () => {
  it('lists the sessions by state, with counts and each type\'s ACK or NACK', async () => {
    await visit('#/');
    await row('default.ghost-1').waitFor();

    const rows = await page.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-node'), tr.getAttribute('data-state')]));
    expect(rows).toEqual([
      ['default.backend-1', 'serving'],
      ['default.ghost-1', 'awaiting-snapshot'],
      ['default.web-1', 'serving'],
      ['default.web-2', 'serving'],
    ]);
    expect(await page.locator('a.count[data-state="serving"] .count-n').textContent()).toBe('3');
    expect(await page.locator('a.count[data-state="awaiting-snapshot"] .count-n').textContent()).toBe('1');
    expect(await row('default.web-2').locator('td.type').allTextContents()).toEqual(['ACK', 'ACK', 'NACK', '–']);
    expect(await row('default.ghost-1').textContent()).toContain('CHANCERY_MESH_DATAPLANE_NOT_FOUND');
    await page.screenshot({ path: path.join(ARTIFACTS, 'fleet.png'), fullPage: true });
  });

  it('filters with its form controls: NACKing only, then by state', async () => {
    await visit('#/');
    await row('default.web-1').waitFor();

    await page.getByLabel('NACKing only').check();
    await page.locator('tbody tr').first().and(row('default.web-2')).waitFor();
    await page.locator('tbody tr').nth(1).waitFor({ state: 'detached' });
    expect(new URL(page.url()).hash).toBe('#/?nacking=true');

    await page.getByLabel('NACKing only').uncheck();
    const state = page.getByLabel('State', { exact: true });
    await state.focus();
    await state.selectOption('awaiting-snapshot');
    await page.locator('tbody tr').first().and(row('default.ghost-1')).waitFor();
    await page.locator('tbody tr').nth(1).waitFor({ state: 'detached' });
    // The page kept the control, and its focus, while the table changed.
    expect(await page.locator('select#filter-state:focus').count()).toBe(1);
  });

  it('shows a closed stream move to disconnected and then evicted, without a reload', async () => {
    await visit('#/');
    await row('default.backend-1', 'serving').waitFor();
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));

    backend.close();
    await row('default.backend-1', 'disconnected').waitFor();
    await page.locator('a.count[data-state="disconnected"] .count-n').filter({ hasText: /^1$/ }).waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-disconnected.png'), fullPage: true });

    harness.clock.increment(10_000);
    await row('default.backend-1', 'evicted').waitFor();
    await page.locator('a.count[data-state="serving"] .count-n').filter({ hasText: /^2$/ }).waitFor();
    expect(harness.cp.session('default.backend-1')).toBeUndefined();
    expect(navigations).toEqual([]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'fleet-evicted.png'), fullPage: true });
  });
});

describe('the node page', () => {
  it('highlights the current state in the chart and marks the path that led there', async () => {
    await visit('#/nodes/default.web-2');
    const current = page.locator('figure.chart svg g.node.current');
    await current.waitFor();

    expect(await current.locator('title').textContent()).toBe('serving');
    expect(await page.locator('figure.chart svg g.node.current').count()).toBe(1);
    // Each drawn edge is the chart transition its id names: the walk went in, through generating, to serving.
    const walked = await page.locator('figure.chart svg g.edge.walked').evaluateAll((groups) => groups.map((group) => group.id));
    const chart = (await (await fetch(`http://${harness.api}/statechart?format=json`)).json()) as Statechart;
    const taken = walked.map((id) => chart.transitions[Number(id.slice(1))]!).map(({ source, targets }) => `${source}->${targets.join(',')}`);
    expect(taken.sort()).toEqual(['arriving->generating', 'awaiting-snapshot->serving', 'connecting->awaiting-snapshot']);
    expect(await page.locator('.timeline').textContent()).toContain(NACK_MESSAGE);
    expect(await page.locator('.config').textContent()).toContain('inbound:127.0.0.1:10003');
    await page.screenshot({ path: path.join(ARTIFACTS, 'node.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: path.join(ARTIFACTS, 'node-dark.png'), fullPage: true });
  });

  it('follows the node live: its stream closes and the chart moves to disconnected', async () => {
    await visit('#/nodes/default.web-1');
    await page.locator('figure.chart svg g.node.current').waitFor();

    web.close();
    await page.locator('figure.chart svg g.node.current > title').filter({ hasText: /^disconnected$/ }).waitFor({ state: 'attached' });
    // The stream closed while streaming: the edge from the streaming cluster, drawn from its first leaf.
    const latest = await page.locator('figure.chart svg g.edge.latest').evaluateAll((groups) => groups.map((group) => group.id));
    const chart = (await (await fetch(`http://${harness.api}/statechart?format=json`)).json()) as Statechart;
    expect(latest.map((id) => chart.transitions[Number(id.slice(1))]!).map(({ source, targets, trigger }) => [source, targets, trigger])).toEqual([
      ['streaming', ['disconnected'], { kind: 'event', event: 'stream.closed' }],
    ]);
    expect(await page.locator('.timeline li').first().textContent()).toContain('stream.closed');
  });

  it('shows a Delta node by its protocol, and how many resources it holds though none was sent again', async () => {
    const node = 'default.web-3';
    await harness.cp.apply(envoyDataplane('web-3', { inbound: [{ port: 10004, service: 'web' }] }));
    const first = harness.streams.delta();
    first.send({ typeUrl: CLUSTER, nodeId: node });
    const clusters = await first.nextResponse();
    first.ack(clusters);
    const disconnected = sessionIn(harness.cp, node, 'disconnected');
    first.close();
    await disconnected;
    // It comes back holding every cluster at the current version: the answer carries none.
    const again = harness.streams.delta();
    const serving = sessionIn(harness.cp, node, 'serving');
    again.send({ typeUrl: CLUSTER, nodeId: node, initialVersions: Object.fromEntries(clusters.resources.map((r) => [r.name, r.version])) });
    await serving;
    const back = await again.nextResponse();
    again.ack(back);
    expect(back.resources).toEqual([]);
    const held = String(clusters.resources.length);

    await visit(`#/nodes/${node}`);
    await page.locator('figure.chart svg g.node.current').waitFor();
    expect(await page.locator('dl.facts > div').filter({ hasText: 'Protocol' }).locator('dd').textContent()).toBe('Delta');
    const resources = page.locator('table.types tbody tr').filter({ has: page.locator('th', { hasText: /^CDS$/ }) }).locator('td.num');
    expect([await resources.textContent(), await resources.getAttribute('title')]).toEqual([held, 'resources the node holds']);
    const opened = page.locator('.timeline li').filter({ hasText: 'stream.opened' }).first().locator('dl.detail > div');
    expect(await opened.evaluateAll((facts) => facts.map((fact) => [fact.querySelector('dt')?.textContent, fact.querySelector('dd')?.textContent]))).toContainEqual(['holds', held]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'node-delta.png'), fullPage: true });
  });

  it('links back to the fleet, from which each node is a link', async () => {
    await visit('#/');
    await row('default.web-1').getByRole('link', { name: 'default.web-1' }).click();
    await page.locator('figure.chart svg g.node.current').waitFor();
    expect(new URL(page.url()).hash).toBe('#/nodes/default.web-1');
    await page.getByRole('link', { name: '← Fleet' }).press('Enter');
    await row('default.web-1').waitFor();
  });
});
