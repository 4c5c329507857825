import { vi } from 'vitest';
import { budget } from './budget.js';

// Each test file's default budgets, scaled to how slow this machine is now (vitest.config.ts has
// a quiet machine's): the same factor as every other budget the file's tests take.
vi.setConfig({ testTimeout: budget(60_000), hookTimeout: budget(60_000) });
