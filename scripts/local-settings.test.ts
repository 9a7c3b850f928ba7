import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { buildIsCurrent, localVariables, portFrom, unsetLocalDefaults } from "./local-settings.ts";

const folder = () => mkdtempSync(join(tmpdir(), "local-"));

describe("what npm start decides before it starts anything", () => {
  it("takes a port from its variable, or says what is wrong with it", () => {
    expect(portFrom("PORT", 8787, {})).toEqual({ port: 8787 });
    expect(portFrom("PORT", 8787, { PORT: " 3000 " })).toEqual({ port: 3000 });
    expect(portFrom("PORT", 8787, { PORT: "70000" })).toEqual({ problem: 'PORT must be a port number, got "70000"' });
  });

  it("reads the developer's variables where wrangler does: .dev.vars, or else .env and .env.local", () => {
    const dir = folder();
    writeFileSync(join(dir, ".env"), "SENTRY_DSN=https://k@o1.ingest.sentry.io/2\nexport TUNNEL_ROUTE = /k7q2x9\n# SENTRY_ENVIRONMENT=x\n");
    writeFileSync(join(dir, ".env.local"), "SENTRY_ENVIRONMENT=staging\n");
    expect(localVariables(dir)).toEqual({ SENTRY_DSN: "https://k@o1.ingest.sentry.io/2", TUNNEL_ROUTE: "/k7q2x9", SENTRY_ENVIRONMENT: "staging" });
    writeFileSync(join(dir, ".dev.vars"), "TUNNEL_TIMEOUT_MS=5000\n");
    expect(localVariables(dir)).toEqual({ TUNNEL_TIMEOUT_MS: "5000" });
  });

  it("gives wrangler the local defaults only for what the developer has not set", () => {
    expect(unsetLocalDefaults("http://localhost:8969", new Set(["SENTRY_DSN"]))).toEqual([
      ["SENTRY_ENVIRONMENT", "development"],
      ["TUNNEL_UPSTREAM_ORIGIN", "http://localhost:8969"],
    ]);
  });

  it("serves the build again only if it is newer than every source and made for this release", () => {
    const dir = folder();
    for (const path of ["app", "build", "public/build"]) mkdirSync(join(dir, path), { recursive: true });
    writeFileSync(join(dir, "app/root.tsx"), "export {};\n");
    writeFileSync(join(dir, "app/release.generated.ts"), 'export const RELEASE = "abc";\n');
    writeFileSync(join(dir, "public/build/entry.js"), "");
    writeFileSync(join(dir, "build/index.js"), "");
    const at = (path: string, seconds: number) => utimesSync(join(dir, path), seconds, seconds);
    at("app/root.tsx", 1_000);
    at("app/release.generated.ts", 1_000);
    at("build/index.js", 2_000);
    // The build's own output in public/ does not make it stale.
    at("public/build/entry.js", 3_000);
    expect(buildIsCurrent(dir, () => "abc")).toBe(true);
    expect(buildIsCurrent(dir, () => "def")).toBe(false);
    at("app/root.tsx", 3_000);
    expect(buildIsCurrent(dir, () => "abc")).toBe(false);
  });
});
