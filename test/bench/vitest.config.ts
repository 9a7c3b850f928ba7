import { fileURLToPath } from "node:url";

import { defineConfig } from "vitest/config";

/** `npm run bench` and `npm run bench:profile`: long runs, apart from `npm test`, which carries no timing at all. */
export default defineConfig({
  test: {
    root: fileURLToPath(new URL("../..", import.meta.url)),
    include: ["test/bench/*.bench.ts"],
    setupFiles: ["test/bench/setup.ts"],
    testTimeout: 300_000,
    // One benchmark at a time: two at once would share the two cores and skew both.
    fileParallelism: false,
    hookTimeout: 120_000,
  },
});
