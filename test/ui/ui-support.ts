import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import type { ControlPlane } from '../../src/index.js';
import type { SessionView } from '../../src/machines/session-view.js';
import type { AdsStream } from '../support/ads-client.js';
import { envoyHandshake } from '../support/envoy-handshake.js';

/** Screenshots for a person to look at; git ignores the folder. */
export const ARTIFACTS = path.resolve(import.meta.dirname, '../artifacts');

/** What an Envoy says when it refuses a listener, as the pages show it. */
export const NACK_MESSAGE = 'listener inbound:127.0.0.1:10003: invalid filter chain: port 0 is out of range';

/** Debian's headless Chromium, quiet: no first-run, sync or background requests. */
export async function launchBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Opens a UI page of the API at `api` and waits until its live feed is connected, so no later change is missed. */
export async function visit(page: Page, api: string, hash: string): Promise<void> {
  await page.goto(`http://${api}/ui${hash}`);
  await page.locator('#live[data-live="on"]').waitFor();
}

/** The fleet table's row of `node`, in `state` when given. */
export function sessionRow(page: Page, node: string, state?: string): Locator {
  return page.locator(state === undefined ? `tr[data-node="${node}"]` : `tr[data-node="${node}"][data-state="${state}"]`);
}

/**
 * Subscribes on `stream` like Envoy (CDS, EDS for its EDS clusters when `endpoints`, LDS), ACKing
 * CDS and EDS; LDS is ACKed, or NACKed with `nack` (then it resolves once `cp`'s session has
 * recorded the NACK).
 */
export async function connectEnvoy(stream: AdsStream, cp: ControlPlane, node: string, options: { endpoints: boolean; nack?: string }): Promise<AdsStream> {
  const recorded = options.nack === undefined ? undefined : nackRecorded(cp, node);
  await envoyHandshake(stream, node, { endpoints: options.endpoints, ...(options.nack !== undefined && { nackListeners: options.nack }) });
  await recorded;
  return stream;
}

function nackRecorded(cp: ControlPlane, node: string): Promise<SessionView> {
  return new Promise((resolve) => {
    const subscription = cp.sessions.subscribe((view) => {
      if (view.node !== node || view.types.LDS?.nacked === undefined) return;
      subscription.unsubscribe();
      resolve(view);
    });
  });
}
