import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import { startTestPostgres, type TestPostgres } from '../store/test-postgres.js';
import { killAll } from './chancery-process.js';
import { crashScenario, restartScenario } from './durability-scenarios.js';

let postgres: TestPostgres;

beforeAll(async () => {
  postgres = await startTestPostgres();
});

afterEach(async () => {
  await killAll();
});

afterAll(async () => {
  await postgres?.stop();
});

describe('chancery run --store postgres://…', () => {
  it('keeps the resources and their history across a restart, and rebuilds from the checkpoint --retention leaves', async () => {
    await restartScenario(await postgres.newDatabase(), { retention: true });
  });

  it('has every acknowledged write in the log after a SIGKILL mid-burst, nothing refused, and no half of a Mesh delete', async () => {
    await crashScenario(await postgres.newDatabase());
  });
});
