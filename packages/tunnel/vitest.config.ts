import { fileURLToPath } from "node:url";

import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

/**
 * The date and flags the workerd tests run under: the app's `wrangler.toml`'s, which its
 * `test/support/workerd.test.ts` holds together with this.
 */
export const COMPATIBILITY = { compatibilityDate: "2026-11-02", compatibilityFlags: ["nodejs_compat"] };

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
    plugins: [
      cloudflareTest({
        miniflare: {
          ...COMPATIBILITY,
          queueProducers: { TUNNEL_SPOOL: { queueName: "tunnel-spool" } },
          r2Buckets: ["TUNNEL_SPOOL_BUCKET"],
          // The README's limiter; a spool budget small enough for a test to reach.
          ratelimits: {
            TUNNEL_RATE_LIMITER: { namespace_id: "1001", simple: { limit: 60, period: 10 } },
            TUNNEL_SPOOL_CLIENT_BUDGET: { namespace_id: "1002", simple: { limit: 3, period: 60 } },
          },
        },
      }),
    ],
    test: { name: "tunnel-workerd", root, include: ["src/**/*.workerd.test.ts", "test/**/*.workerd.test.ts"] },
  },
];

export default defineConfig({ test: { projects: tunnelProjects } });
