import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ again when src/ is newer (tests start bin/palaver.js); collects every test's log lines and fails
    // the run when one holds a secret (see test/support/run-log.ts).
    globalSetup: ['test/support/fresh-build.ts', 'test/support/run-log-check.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Suites share loopback services; a few workers keep a 2-core machine responsive.
    maxWorkers: 2,
  },
});
