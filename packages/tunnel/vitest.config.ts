import { fileURLToPath } from "node:url";

import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

const root = fileURLToPath(new URL(".", import.meta.url));

/**
 * The package's tests: in Node where workerd adds nothing (pure functions, with fast-check), and
 * in workerd through Cloudflare's own integration where the code depends on workerd's streams,
 * queues and R2 (`*.workerd.test.ts`, which import `cloudflare:test`). Sentry is a stub `fetch`
 * there; no socket is opened. The app's `npm test` runs these projects too.
 */
export const tunnelProjects: TestProjectInlineConfiguration[] = [
  {
    extends: true,
    test: { name: "tunnel", root, include: ["src/**/*.test.ts", "test/**/*.test.ts"], exclude: ["**/*.workerd.test.ts"], environment: "node" },
  },
  {
    extends: true,
    plugins: [cloudflareTest({ wrangler: { configPath: `${root}test/wrangler.toml` } })],
    test: { name: "tunnel-workerd", root, include: ["src/**/*.workerd.test.ts", "test/**/*.workerd.test.ts"] },
  },
];

export default defineConfig({ test: { projects: tunnelProjects } });
