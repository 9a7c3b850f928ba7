import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { DATED, missingPaths, namedPaths } from "./check-paths.ts";

describe("the paths the docs and comments name", () => {
  it("reads a path in prose, in code, and as a glob's fixed part, and no URL's path", () => {
    const text = "See `packages/tunnel/src/index.ts`, then app/**/*.test.ts and docs/decisions/.\n// scripts/start.ts: npm start, not https://example.com/app/x or /build/x.js";
    expect(namedPaths(text, "README.md").map(({ path, at }) => `${at} ${path}`)).toEqual([
      "README.md:1 packages/tunnel/src/index.ts",
      "README.md:1 app/",
      "README.md:1 docs/decisions/",
      "README.md:2 scripts/start.ts",
    ]);
  });

  // The samples below are in a folder of their own, `lib/`, so that the check itself, run over this
  // file, does not take them for the project's paths.
  it("resolves a Markdown link from its file's folder", () => {
    expect(namedPaths("As [001](001-worker-entry.md#why) said, and [Sentry](https://sentry.io/).", "lib/decisions/016-x.md", ["lib"]).map(({ path }) => path)).toEqual([
      "lib/decisions/001-worker-entry.md",
    ]);
  });

  it("finds what is named and not there", () => {
    const root = mkdtempSync(join(tmpdir(), "paths-"));
    mkdirSync(join(root, "lib"));
    writeFileSync(join(root, "lib/kept.ts"), "// lib/kept.ts names itself\n");
    writeFileSync(join(root, "README.md"), "`lib/kept.ts` and `lib/moved.ts`\n");
    expect(missingPaths(root, ["README.md", "lib/kept.ts"], ["lib"])).toEqual([{ path: "lib/moved.ts", at: "README.md:1" }]);
  });

  it("leaves a decision record the paths of its day, and holds every other doc to today's", () => {
    expect(["docs/decisions/012-the-tunnels-house.md", "docs/decisions/030-operators-see-the-tunnel.md"].every((file) => DATED.test(file))).toBe(true);
    expect(["docs/operating.md", "README.md", "packages/tunnel/README.md", "docs/delivery.md"].some((file) => DATED.test(file))).toBe(false);
  });
});
