import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Fails the run if a test leaves a file in the repository.
    globalSetup: ['test/global-setup.ts'],
    // Real gRPC servers, real clients and 10,000-session cycles: generous, but every test is bounded.
    // A quiet machine's budgets; the setup file scales them to a slow one (test/support/budget.ts).
    testTimeout: 60_000,
    hookTimeout: 60_000,
    setupFiles: ['test/support/budget-setup.ts'],
    // Two cores: one file per core keeps real-network tests from starving each other.
    maxWorkers: 2,
  },
});
