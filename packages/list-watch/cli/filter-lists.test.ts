import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

import { watchBlockLists, type WatchedRequest } from "../src/index.ts";
import { afterAll, describe, expect, it } from "vitest";

import { listTexts, loadFilterEngines, PINNED_LISTS } from "./filter-lists.ts";

/**
 * Rules of the kinds a list could add against a site's monitoring, as uBO's lists write them:
 * site-specific, a shape against randomised script names (`strict1p`, `to=`), and a generic path.
 */
const ADDED = [
  "! Title: Added for the test",
  "||app.example.com/k7q2x9$xhr",
  String.raw`/^https:\/\/[.\w]+\/build\/_shared\/sdk\.client-[A-Z0-9]{8}\.js$/$script,1p,strict1p,match-case,to=~gov|~edu`,
  "/telemetry-tunnel/$xmlhttprequest",
  "||other.example.org/6b1xzn8op8$xhr",
].join("\n");

/** Each host's requests: paths the pinned lists block, and paths they pass. */
const CASES: Record<string, [string, WatchedRequest["type"]][]> = {
  "app.example.com": [
    ["/6b1xzn8op8", "xmlhttprequest"],
    ["/6b1xzn8op8/csp", "xmlhttprequest"],
    ["/monitoring?o=4501&p=4502&r=us", "xmlhttprequest"],
    ["/monitoring", "xmlhttprequest"],
    ["/k7q2x9", "xmlhttprequest"],
    ["/telemetry-tunnel/x", "xmlhttprequest"],
    ["/build/_shared/sdk.client-KICEP5M6.js", "script"],
    ["/build/_shared/sdk.client-kicep5m6.js", "script"],
    ["/build/entry.client-53RXZPNN.js", "script"],
  ],
  "github.com": [
    ["/_private/browser/errors", "xmlhttprequest"],
    ["/_private/browser/stats", "xmlhttprequest"],
  ],
  "suno.com": [
    ["/monitoring", "xmlhttprequest"],
    ["/6b1xzn8op8", "xmlhttprequest"],
  ],
};

describe("the list watch's verdicts, against uBlock Origin's own engine on the same lists", () => {
  const scratch = mkdtempSync(join(tmpdir(), "watch-lists-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  const added = join(scratch, "added.txt");
  writeFileSync(added, ADDED);
  const files = [...PINNED_LISTS, added];

  // Two engines load every list: seconds of CPU, past vitest's 5 s on a loaded machine. The bound
  // holds there; the test waits for its verdicts, never for a timer.
  it("blocks exactly what uBO blocks, for every host and path, the pinned lists and a few added rules", { timeout: 120_000 }, async () => {
    const engines = await loadFilterEngines(files);
    const texts = listTexts(files);
    const urls = Object.keys(texts).map((name) => `https://lists.test/${name}`);
    const fetcher = (async (input: RequestInfo | URL) => new Response(texts[basename(String(input))])) as typeof fetch;
    for (const [host, paths] of Object.entries(CASES)) {
      const requests = paths.map(([path, type]): WatchedRequest => ({ what: path, path, type, remedy: "" }));
      const line = await watchBlockLists({ settings: { host, lists: urls }, requests, fetch: fetcher, log: () => {} });
      const watch = requests.map(({ path }) => `${host}${path} ${line.blocks.some((block) => block.path === path) ? "blocked" : "passes"}`);
      const ubo = requests.map(({ path, type }) => {
        const [verdict] = engines.verdicts({ url: `https://${host}${path}`, pageUrl: `https://${host}/`, type: type === "xmlhttprequest" ? "fetch" : type });
        return `${host}${path} ${verdict!.blocked ? "blocked" : "passes"}`;
      });
      expect(watch).toEqual(ubo);
    }
  });
});
