import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

const root = new URL("..", import.meta.url).pathname;

describe("npm start and npm run dev, with a port taken", () => {
  it.each([
    ["PORT", "the app"],
    ["SPOTLIGHT_PORT", "Spotlight"],
  ])("name the taken %s and how to choose another, before building anything", { timeout: 30_000 }, async (variable, what) => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const { port } = taken.address() as { port: number };
    try {
      const result = spawnSync(process.execPath, ["scripts/start.ts"], {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, PORT: "1", SPOTLIGHT_PORT: "2", [variable]: String(port) },
        timeout: 30_000,
      });
      expect(result.status).toBe(1);
      expect(result.stderr.trim()).toBe(`Port ${port} (${what}) is taken. Stop what uses it, or choose another: ${variable}=${port + 1} npm start`);
      // Nothing else was said: no build ran.
      expect(result.stdout).toBe("");
    } finally {
      taken.close();
    }
  });
});

describe("npm start and npm run dev, with a bad variable", () => {
  /** The project as a checkout with the developer's own `.dev.vars` (and `wrangler.toml`, edited), without writing into this one. */
  function checkoutWith(devVars: string, editToml?: (toml: string) => string): string {
    const dir = mkdtempSync(join(tmpdir(), "checkout-"));
    for (const name of ["app", "worker", "node_modules", "package.json", "remix.config.js"]) symlinkSync(join(root, name), join(dir, name));
    const toml = readFileSync(join(root, "wrangler.toml"), "utf8");
    writeFileSync(join(dir, "wrangler.toml"), editToml ? editToml(toml) : toml);
    writeFileSync(join(dir, ".dev.vars"), devVars);
    return dir;
  }

  /** What `scripts/start.ts` says on its error output in that checkout before it stops, one line per entry. */
  function refusalIn(dir: string, args: string[] = []): { status: number | null; errors: string[]; stdout: string } {
    const result = spawnSync(process.execPath, [join(root, "scripts/start.ts"), ...args], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, PORT: "1", SPOTLIGHT_PORT: "2" },
      timeout: 30_000,
    });
    rmSync(dir, { recursive: true });
    return { status: result.status, errors: result.stderr.split("\n").filter((line) => line !== ""), stdout: result.stdout };
  }

  it.each([
    ["the KEY: value form of .dev.vars, which wrangler applies", "TUNNEL_TIMEOUT_MS: soon\n", undefined, 'TUNNEL_TIMEOUT_MS must be a whole number above 0, got "soon"'],
    ["an unquoted number in [vars]", "", (toml: string) => toml.replace('TUNNEL_TIMEOUT_MS = "30000"', "TUNNEL_TIMEOUT_MS = 0"), 'TUNNEL_TIMEOUT_MS must be a whole number above 0, got 0'],
    [
      "an unquoted number beside a bad value",
      "TUNNEL_ROUTE=/api/x/sentry\n",
      (toml: string) => toml.replace('TUNNEL_TIMEOUT_MS = "30000"', "TUNNEL_TIMEOUT_MS = 30000"),
      'TUNNEL_ROUTE holds "sentry", a word that generic ad-blocker rules block on: choose a neutral path, got "/api/x/sentry"',
    ],
    [
      "a wrangler.toml without the request limiter",
      "",
      (toml: string) => toml.replace(/\[\[ratelimits\]\]\nname = "TUNNEL_RATE_LIMITER"\n[^\n]*\n[^\n]*\n/, ""),
      "TUNNEL_RATE_LIMITER is not bound, so the requests one client sends to Sentry would have no limit: declare it in wrangler.toml " +
        "(each [env.*] section needs its own [[ratelimits]]), or set TUNNEL_RATE_LIMITING=off to run without limits on purpose",
    ],
  ])("npm start reads %s as wrangler would, and says a bad value in one line", { timeout: 30_000 }, (_, devVars, editToml, problem) => {
    const { status, errors, stdout } = refusalIn(checkoutWith(devVars, editToml));
    expect(status).toBe(1);
    expect(errors).toEqual([`Configuration: ${problem}`]);
    expect(stdout).toBe("");
  });

  it.each([
    ["npm start", []],
    ["npm run dev", ["--dev"]],
  ])("%s says it in one line of its own that names the variable, and starts and builds nothing", { timeout: 30_000 }, (_command, args) => {
    const { status, errors, stdout } = refusalIn(checkoutWith("TUNNEL_ROUTE=/k7q2x9\nTUNNEL_RETIRED_ROUTES=/a3f8c1, /k7q2x9/csp\n"), args);
    expect(status).toBe(1);
    expect(errors).toEqual([
      'Configuration: TUNNEL_RETIRED_ROUTES "/k7q2x9/csp" would take envelopes at /k7q2x9/csp, where TUNNEL_ROUTE (/k7q2x9) takes CSP reports: ' +
        "one path cannot serve both, and what the pages post there would be refused. Choose a path that is no other route and no route's report path",
    ]);
    expect(stdout).toBe("");
  });
});
