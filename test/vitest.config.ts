import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * Three layers: unit tests beside the code they test, in Node; Worker tests against `build/` in
 * workerd; browser tests in Chromium against `wrangler dev`. `npm test` builds first.
 *
 * Two files at a time on this 2-core machine: most of a Worker test's time is workerd's and the
 * sockets', not the test process's (the Worker layer took 107 s one file at a time, 58 s two).
 * The browser layer runs after the others, one file at a time: its budgets (a Spotlight listing,
 * an edit reloaded) are a developer's, measured on a machine not also running load tests.
 */
export default defineConfig({
  test: {
    root,
    maxWorkers: 2,
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["app/**/*.test.ts", "worker/**/*.test.ts", "scripts/**/*.test.ts", ".ci/**/*.test.ts", "test/support/**/*.test.ts"], environment: "node" },
      },
      {
        extends: true,
        test: { name: "worker", include: ["test/worker/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 60_000 },
      },
      {
        extends: true,
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          globalSetup: ["./test/browser/global-setup.ts"],
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
