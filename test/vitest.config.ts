import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

import { tunnelProjects } from "../packages/tunnel/vitest.config";

const root = fileURLToPath(new URL("..", import.meta.url));

/** The browser tests that time a developer's waits. */
const DEVELOPER_WAITS = ["test/browser/dev-loop.test.ts", "test/browser/spotlight.test.ts"];
const ONE_BROWSER_AT_A_TIME = {
  globalSetup: ["./test/browser/global-setup.ts"],
  testTimeout: 60_000,
  hookTimeout: 120_000,
  fileParallelism: false,
};

/**
 * Three layers: unit tests beside the code they test, in Node, and the tunnel package's in workerd
 * where its code depends on workerd (its own projects, `packages/tunnel/vitest.config.ts`); Worker
 * tests against `build/` in workerd; browser tests in Chromium against `wrangler dev`. `npm test`
 * builds first.
 *
 * Two files at a time on this 2-core machine: most of a Worker test's time is workerd's and the
 * sockets', not the test process's (the Worker layer took 107 s one file at a time, 58 s two).
 * The browser layer runs after the other two, one file at a time. Its tests of a developer's waits
 * (an edit reloaded, a Spotlight listing) are the "developer" project: they hold that each wait
 * ends, and report it against its budget (`test/support/developer-waits.ts`), which
 * `npm run bench:developer` reads on a quiet machine by running that project alone.
 */
export default defineConfig({
  test: {
    root,
    maxWorkers: 2,
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      ...tunnelProjects.map((project) => ({ ...project, test: { ...project.test, sequence: { groupOrder: 1 } } })),
      {
        extends: true,
        test: {
          name: "unit",
          include: ["app/**/*.test.ts", "worker/**/*.test.ts", "scripts/**/*.test.ts", ".ci/**/*.test.ts", "test/support/**/*.test.ts"],
          environment: "node",
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: { name: "worker", include: ["test/worker/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 60_000, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        test: { name: "developer", include: DEVELOPER_WAITS, sequence: { groupOrder: 0 }, ...ONE_BROWSER_AT_A_TIME },
      },
      {
        extends: true,
        test: { name: "browser", include: ["test/browser/**/*.test.ts"], exclude: DEVELOPER_WAITS, sequence: { groupOrder: 2 }, ...ONE_BROWSER_AT_A_TIME },
      },
    ],
  },
});
