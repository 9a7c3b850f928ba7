import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { missingPaths, namedPaths } from "./check-paths.ts";

describe("the paths the docs and comments name", () => {
  it("reads a path in prose, in code, and as a glob's fixed part, and no URL's path", () => {
    const text = "See `app/tunnel/index.ts`, then app/**/*.test.ts and docs/decisions/.\n// scripts/start.ts: npm start, not https://example.com/app/x or /build/x.js";
    expect(namedPaths(text, "README.md").map(({ path, at }) => `${at} ${path}`)).toEqual([
      "README.md:1 app/tunnel/index.ts",
      "README.md:1 app/",
      "README.md:1 docs/decisions/",
      "README.md:2 scripts/start.ts",
    ]);
  });

  it("resolves a Markdown link from its file's folder", () => {
    expect(namedPaths("As [001](001-worker-entry.md#why) said, and [Sentry](https://sentry.io/).", "docs/decisions/016-x.md").map(({ path }) => path)).toEqual([
      "docs/decisions/001-worker-entry.md",
    ]);
  });

  it("finds what is named and not there", () => {
    const root = mkdtempSync(join(tmpdir(), "paths-"));
    mkdirSync(join(root, "app"));
    writeFileSync(join(root, "app/kept.ts"), "// app/kept.ts names itself\n");
    writeFileSync(join(root, "README.md"), "`app/kept.ts` and `app/moved.ts`\n");
    expect(missingPaths(root, ["README.md", "app/kept.ts"])).toEqual([{ path: "app/moved.ts", at: "README.md:1" }]);
  });
});
