import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

const root = new URL("..", import.meta.url).pathname;
const DSN = "https://0123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4502";

/** `npm run deploy`'s script, run as a first-time user would: no login, no Cloudflare token. */
function deploy(args: string[], env: Record<string, string> = {}) {
  const home = mkdtempSync(join(tmpdir(), "no-login-"));
  const { CLOUDFLARE_API_TOKEN: _token, SENTRY_AUTH_TOKEN: _sentry, ...rest } = process.env;
  const result = spawnSync(process.execPath, ["scripts/deploy.ts", ...args], {
    cwd: root,
    encoding: "utf8",
    env: { ...rest, HOME: home, XDG_CONFIG_HOME: home, WRANGLER_SEND_METRICS: "false", ...env },
    timeout: 60_000,
  });
  return { status: result.status, lines: `${result.stdout}${result.stderr}`.split("\n").filter((line) => line.trim() !== "") };
}

// Each test starts the deploy script, which starts the built Worker to check its variables: some
// 3 s alone, and past vitest's 5 s default beside the Worker tests.
describe("npm run deploy, before anything is uploaded", { timeout: 30_000 }, () => {
  it("says in one line each what is missing, exits non-zero, and shows no stack trace", () => {
    const { status, lines } = deploy(["--var", "SENTRY_DSN:not-a-dsn"], { SENTRY_AUTH_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Cloudflare: not logged in. Run `npx wrangler login`, or set CLOUDFLARE_API_TOKEN.",
      "Sentry: SENTRY_ORG is not set; source maps need it with SENTRY_AUTH_TOKEN.",
      "Sentry: SENTRY_PROJECT is not set; source maps need it with SENTRY_AUTH_TOKEN.",
      'Configuration: SENTRY_DSN is not a valid Sentry DSN (https://<key>@<host>/<project id>): "not-a-dsn"',
      "Nothing was deployed or uploaded.",
    ]);
  });

  it("refuses a tunnel route that ad-blockers' generic rules would match, naming the variable", () => {
    const { status, lines } = deploy(["--var", "TUNNEL_ROUTE:/api/sentry-tunnel"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      'Configuration: TUNNEL_ROUTE holds "sentry", a word that generic ad-blocker rules block on: choose a neutral path, got "/api/sentry-tunnel"',
      "Nothing was deployed or uploaded.",
    ]);
  });

  it("reads every value of one --var, as wrangler does", () => {
    const { status, lines } = deploy(["--var", "SENTRY_ENVIRONMENT:staging", "TUNNEL_ROUTE:/build/x"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines[0]).toBe('Configuration: TUNNEL_ROUTE would shadow /build/*, which the app serves, got "/build/x"');
  });

  it("checks the variables of the --env the deploy is for", { timeout: 60_000 }, () => {
    // Wrangler's environments do not inherit [vars]: the staging section's are the ones deployed.
    const config = join(root, ".cache/wrangler-with-env.toml");
    mkdirSync(join(root, ".cache"), { recursive: true });
    writeFileSync(config, `${readFileSync(join(root, "wrangler.toml"), "utf8")}\n[env.staging.vars]\nTUNNEL_TIMEOUT_MS = "soon"\n`);
    for (const args of [["--env", "staging"], ["--env=staging"], ["-e", "staging"]]) {
      const { status, lines } = deploy([...args, "--config", config], { CLOUDFLARE_API_TOKEN: "token" });
      expect(status, args.join(" ")).toBe(1);
      // After wrangler's own warning that the section redeclares no bindings.
      expect(lines, args.join(" ")).toContain('Configuration: TUNNEL_TIMEOUT_MS must be a whole number above 0, got "soon"');
    }
  });

  it("refuses two rate limiters that share a namespace, whose counts would mix", () => {
    const config = join(mkdtempSync(join(tmpdir(), "shared-namespace-")), "wrangler.toml");
    writeFileSync(config, readFileSync(join(root, "wrangler.toml"), "utf8").replace('namespace_id = "1002"', 'namespace_id = "1001"'));
    const { status, lines } = deploy(["--config", config, "--var", `SENTRY_DSN:${DSN}`], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Configuration: TUNNEL_RATE_LIMITER and TUNNEL_SPOOL_CLIENT_BUDGET share the [[ratelimits]] namespace_id 1001, and so their counts: give each one of its own (docs/operating.md)",
      "Nothing was deployed or uploaded.",
    ]);
  });

  it("refuses to deploy production with monitoring silently off, and names the way to turn it off on purpose", () => {
    // wrangler.toml's own SENTRY_DSN is empty: a first deploy that forgot to set it.
    const { status, lines } = deploy(["--dry-run"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Configuration: SENTRY_DSN is empty, so the deployed pages and Worker would report nothing to Sentry. Set it in wrangler.toml's [vars] " +
        "or with --var SENTRY_DSN:<your project's DSN>, or deploy without monitoring on purpose: npm run deploy -- --monitoring=off",
      "Nothing was deployed or uploaded.",
    ]);
  });

  it.each([
    ["with a DSN", ["--var", `SENTRY_DSN:${DSN}`]],
    ["without one, said on purpose", ["--monitoring=off"]],
    ["without one, to another environment", ["--var", "SENTRY_ENVIRONMENT:staging"]],
  ])("goes on to wrangler with a token and a valid configuration %s (a dry run here)", (_case, args) => {
    const { status, lines } = deploy(["--dry-run", "--outdir", mkdtempSync(join(tmpdir(), "dry-run-")), ...args], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(0);
    expect(lines).toContain("--dry-run: exiting now.");
  });
});
