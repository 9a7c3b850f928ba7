import { readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";

import { describe, expect, it } from "vitest";

import { wranglerWorker } from "../../scripts/wrangler-config";
import { root, wranglerCompatibility } from "./workerd";

/** Where `name`'s package.json is, as the installed package `from` resolves it. */
const resolvedFrom = (from: string, name: string) => realpathSync(createRequire(realpathSync(`${root}node_modules/${from}/package.json`)).resolve(`${name}/package.json`));
const version = (path: string) => (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;

/**
 * One runtime line: the Worker tests (this folder's `workerd.ts`), the tunnel's tests in workerd
 * (Cloudflare's vitest integration) and `wrangler dev` all run one Miniflare and one workerd, and
 * the date the Worker declares is one that workerd knows (decision 005).
 */
describe("the runtime the tests run on", () => {
  const ours = realpathSync(createRequire(import.meta.url).resolve("miniflare/package.json"));

  it("is the Miniflare and workerd that wrangler dev runs, and that the vitest integration runs", () => {
    expect(resolvedFrom("wrangler", "miniflare")).toBe(ours);
    expect(resolvedFrom("@cloudflare/vitest-plugin", "miniflare")).toBe(ours);
    expect(resolvedFrom("wrangler", "workerd")).toBe(resolvedFrom("miniflare", "workerd"));
  });

  it("declares one compatibility date everywhere, not newer than that workerd's", () => {
    // What the Worker tests start workerd with: wrangler.toml's, as wrangler reads it.
    const declared = wranglerCompatibility();
    // What the tunnel's workerd suites run under: their own wrangler.toml, which the integration reads.
    const { compatibilityDate, compatibilityFlags } = wranglerWorker(`${root}packages/tunnel/test/wrangler.toml`);
    expect({ compatibilityDate, compatibilityFlags }).toEqual(declared);
    // workerd 1.YYYYMMDD.n supports dates up to YYYY-MM-DD.
    const [, y, m, d] = /^1\.(\d{4})(\d{2})(\d{2})\./.exec(version(resolvedFrom("miniflare", "workerd")))!;
    expect(declared.compatibilityDate! <= `${y}-${m}-${d}`).toBe(true);
  });
});
