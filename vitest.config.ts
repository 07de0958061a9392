import { defineConfig } from 'vitest/config';

/**
 * Files that check what a fresh module graph loads (e.g. that undici is imported on the first call, not before): they
 * need a worker whose modules no earlier file has imported.
 */
const NEEDS_FRESH_MODULES = ['test/outgoing-http/undici-loads-on-first-call.test.ts'];

/** What both projects share (the global setup stays with the root, so it runs once). */
const shared = { testTimeout: 20_000, hookTimeout: 30_000 };

export default defineConfig({
  test: {
    // Builds dist/ again when src/ is newer (tests start bin/palaver.js); collects every test's log lines and fails
    // the run when one holds a secret (see test/support/run-log.ts).
    globalSetup: ['test/support/fresh-build.ts', 'test/support/run-log-check.ts'],
    // Suites share loopback services; a few workers keep a 2-core machine responsive.
    maxWorkers: 2,
    projects: [
      {
        test: {
          ...shared,
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: NEEDS_FRESH_MODULES,
          // A worker keeps the modules it imported for the next file. Re-importing src/ for each of ~200 files cost
          // about 40% of the suite's CPU time. Tests therefore leave no global state behind: fake timers are restored,
          // and servers, stores and child processes are closed in afterEach/afterAll.
          isolate: false,
        },
      },
      { test: { ...shared, name: 'fresh-modules', include: NEEDS_FRESH_MODULES } },
    ],
  },
});
