import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import { openEventLog } from '../../src/store/open-event-log.js';
import { killAll } from './chancery-process.js';
import { crashScenario, restartScenario } from './durability-scenarios.js';

let parent: string;
let template: string;

beforeAll(async () => {
  parent = await mkdtemp(path.join(tmpdir(), 'chancery-e2e-pglite-'));
  // Creating a PGlite database runs initdb (seconds); each test copies this migrated, empty one.
  template = path.join(parent, 'template');
  await (await openEventLog(`pglite:${template}`, { instance: 'template' })).close();
});

afterEach(async () => {
  await killAll();
});

afterAll(async () => {
  await rm(parent, { recursive: true, force: true });
});

/** A fresh `--store pglite:DIR`: a copy of the empty template. */
async function freshStore(name: string): Promise<string> {
  const dir = path.join(parent, name);
  await cp(template, dir, { recursive: true });
  return `pglite:${dir}`;
}

describe('chancery run --store pglite:DIR', () => {
  it('keeps the resources and their history across a restart', async () => {
    await restartScenario(await freshStore('restart'), { retention: false });
  });

  it('has every acknowledged write in the log after a SIGKILL mid-burst, nothing refused, and no half of a Mesh delete', async () => {
    await crashScenario(await freshStore('crash'));
  });
});
