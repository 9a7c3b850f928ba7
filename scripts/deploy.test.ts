import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { TEST_DSN } from "@edge-monitoring/tunnel/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

const root = new URL("..", import.meta.url).pathname;
const DSN = TEST_DSN;

/**
 * Cloudflare's API on loopback, as `wrangler secret list` reads it
 * (`GET /accounts/<id>/workers/scripts/<name>/secrets`): the deployed Worker's secrets, by name.
 */
const api = { secrets: [] as string[], failing: false, asked: [] as string[], server: undefined as Server | undefined, base: "" };
beforeAll(async () => {
  api.server = createServer((request, response) => {
    api.asked.push(request.url ?? "");
    response.setHeader("content-type", "application/json");
    const secrets = /\/workers\/scripts\/[^/]+\/secrets$/.test(request.url ?? "") && !api.failing;
    response.statusCode = secrets ? 200 : api.failing ? 500 : 404;
    response.end(JSON.stringify(secrets ? { success: true, errors: [], messages: [], result: api.secrets.map((name) => ({ name, type: "secret_text" })) } : { success: false, errors: [{ code: 7003, message: "No route" }], messages: [], result: null }));
  });
  await new Promise<void>((resolve) => api.server!.listen(0, "127.0.0.1", resolve));
  api.base = `http://127.0.0.1:${(api.server.address() as { port: number }).port}/client/v4`;
});
afterAll(() => new Promise<void>((resolve) => (api.server ? api.server.close(() => resolve()) : resolve())));
beforeEach(() => {
  api.secrets = [];
  api.failing = false;
  api.asked = [];
});

/** `npm run deploy`'s script, run as a first-time user would: no login, no Cloudflare token; Cloudflare's API the loopback one. */
async function deploy(args: string[], env: Record<string, string> = {}) {
  const home = mkdtempSync(join(tmpdir(), "no-login-"));
  const { CLOUDFLARE_API_TOKEN: _token, SENTRY_AUTH_TOKEN: _sentry, ...rest } = process.env;
  const child = spawn(process.execPath, ["scripts/deploy.ts", ...args], {
    cwd: root,
    env: { ...rest, HOME: home, XDG_CONFIG_HOME: home, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_API_BASE_URL: api.base, CLOUDFLARE_ACCOUNT_ID: "0123", ...env },
    timeout: 60_000,
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { status, lines: output.split("\n").filter((line) => line.trim() !== "") };
}

/** A copy of the app's `wrangler.toml`, changed as `edit` says, in a folder of its own, its paths still the app's. */
function configWith(edit: (toml: string) => string): string {
  const config = join(mkdtempSync(join(tmpdir(), "wrangler-")), "wrangler.toml");
  const toml = readFileSync(join(root, "wrangler.toml"), "utf8")
    .replace('main = "build/index.js"', `main = "${root}build/index.js"`)
    .replace('directory = "public"', `directory = "${root}public"`);
  writeFileSync(config, edit(toml));
  return config;
}

// Each test starts the deploy script, which bundles the app's reading of its variables to check
// them: some seconds alone, and past vitest's 5 s default beside the Worker tests.
// A bound that holds on a loaded machine, where one start was seen past 30 s; each test waits for
// the script to end, never for a timer.
describe("npm run deploy, before anything is uploaded", { timeout: 120_000 }, () => {
  it("says in one line each what is missing, exits non-zero, and shows no stack trace", async () => {
    const { status, lines } = await deploy(["--var", "SENTRY_DSN:not-a-dsn"], { SENTRY_AUTH_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Cloudflare: not logged in. Run `npx wrangler login`, or set CLOUDFLARE_API_TOKEN.",
      "Sentry: SENTRY_ORG is not set; source maps need it with SENTRY_AUTH_TOKEN.",
      "Sentry: SENTRY_PROJECT is not set; source maps need it with SENTRY_AUTH_TOKEN.",
      'Configuration: SENTRY_DSN is not a valid Sentry DSN (https://<key>@<host>/<project id>): "not-a-dsn"',
      "Nothing was deployed or uploaded.",
    ]);
  });

  it("refuses a tunnel route that ad-blockers' generic rules would match, naming the variable", async () => {
    const { status, lines } = await deploy(["--var", "TUNNEL_ROUTE:/api/sentry-tunnel"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      'Configuration: TUNNEL_ROUTE holds "sentry", a word that generic ad-blocker rules block on: choose a neutral path, got "/api/sentry-tunnel"',
      "Nothing was deployed or uploaded.",
    ]);
  });

  it("reads every value of one --var, as wrangler does", async () => {
    const { status, lines } = await deploy(["--var", "SENTRY_ENVIRONMENT:staging", "TUNNEL_ROUTE:/build/x"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines[0]).toBe('Configuration: TUNNEL_ROUTE would shadow /build/*, which the app serves, got "/build/x"');
  });

  it("checks the variables of the --env the deploy is for", { timeout: 240_000 }, async () => {
    // Wrangler's environments do not inherit [vars]: the staging section's are the ones deployed.
    const config = join(root, ".cache/wrangler-with-env.toml");
    mkdirSync(join(root, ".cache"), { recursive: true });
    writeFileSync(config, `${readFileSync(join(root, "wrangler.toml"), "utf8")}\n[env.staging.vars]\nTUNNEL_UPSTREAM_ORIGIN = "soon"\n`);
    for (const args of [["--env", "staging"], ["--env=staging"], ["-e", "staging"]]) {
      const { status, lines } = await deploy([...args, "--config", config], { CLOUDFLARE_API_TOKEN: "token" });
      expect(status, args.join(" ")).toBe(1);
      // After wrangler's own warning that the section redeclares no bindings.
      expect(lines, args.join(" ")).toContain('Configuration: TUNNEL_UPSTREAM_ORIGIN must be an origin such as https://example.com, got "soon"');
    }
  });

  it("refuses two rate limiters that share a namespace, whose counts would mix", async () => {
    const config = configWith((toml) => toml.replace('namespace_id = "1002"', 'namespace_id = "1001"'));
    const { status, lines } = await deploy(["--config", config, "--var", `SENTRY_DSN:${DSN}`], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Configuration: TUNNEL_RATE_LIMITER and TUNNEL_SPOOL_CLIENT_BUDGET share the [[ratelimits]] namespace_id 1001, and so their counts: give each one of its own (docs/operating.md)",
      "Nothing was deployed or uploaded.",
    ]);
  });

  it("refuses to deploy production with monitoring silently off, and names the way to turn it off on purpose", async () => {
    // wrangler.toml's own SENTRY_DSN is empty: a first deploy that forgot to set it.
    const { status, lines } = await deploy(["--dry-run"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Configuration: SENTRY_DSN is empty, so the deployed pages and Worker would report nothing to Sentry. Set it in wrangler.toml's [vars] " +
        "or with --var SENTRY_DSN:<your project's DSN>, or deploy without monitoring on purpose: npm run deploy -- --monitoring=off",
      "Nothing was deployed or uploaded.",
    ]);
  });

  it("refuses production with a development upstream set, unless said on purpose", async () => {
    const upstream = ["--var", `SENTRY_DSN:${DSN}`, "TUNNEL_UPSTREAM_ORIGIN:https://collector.example.net"];
    const { status, lines } = await deploy(upstream, { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Configuration: TUNNEL_UPSTREAM_ORIGIN is set to https://collector.example.net, so every envelope and the Worker's own events would go there instead of to Sentry: " +
        "it is for development. Remove it from [vars], or deploy with it on purpose: npm run deploy -- --upstream-origin=on-purpose",
      "Nothing was deployed or uploaded.",
    ]);
    const onPurpose = await deploy([...upstream, "--upstream-origin=on-purpose", "--dry-run", "--outdir", mkdtempSync(join(tmpdir(), "dry-run-"))], { CLOUDFLARE_API_TOKEN: "token" });
    expect(onPurpose.status).toBe(0);
    expect(onPurpose.lines).toContain("--dry-run: exiting now.");
  });

  it("finds a DSN kept as a secret of the deployed Worker, and deploys without it in [vars]", async () => {
    api.secrets = ["SENTRY_DSN"];
    const config = configWith((toml) => toml.replace('SENTRY_DSN = ""\n', ""));
    const { status, lines } = await deploy(["--config", config, "--dry-run", "--outdir", mkdtempSync(join(tmpdir(), "dry-run-"))], { CLOUDFLARE_API_TOKEN: "token" });
    expect(api.asked).toEqual(["/client/v4/accounts/0123/workers/scripts/edge-monitoring-tunnel/secrets"]);
    expect(status).toBe(0);
    expect(lines).toContain("SENTRY_DSN: a secret of the deployed Worker, whose value only the Worker reads; it is checked when the Worker starts.");
    expect(lines).toContain("--dry-run: exiting now.");
  });

  it("when the Worker's secrets cannot be read, refuses production without a DSN and says why, and deploys elsewhere all the same", async () => {
    api.failing = true;
    const production = await deploy(["--dry-run"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(production.status).toBe(1);
    expect(production.lines[0]).toMatch(/^Configuration: SENTRY_DSN is empty, and whether the deployed Worker keeps it as a secret could not be read \(wrangler secret list: /);
    const staging = await deploy(["--dry-run", "--outdir", mkdtempSync(join(tmpdir(), "dry-run-")), "--var", "SENTRY_ENVIRONMENT:staging"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(staging.status).toBe(0);
    expect(staging.lines).toContain("--dry-run: exiting now.");
  });

  it("refuses a DSN kept as a secret that [vars] names too, which Cloudflare would refuse", async () => {
    api.secrets = ["SENTRY_DSN"];
    const { status, lines } = await deploy(["--dry-run"], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Configuration: SENTRY_DSN is a secret of the deployed Worker and also a variable ([vars] or --var): Cloudflare refuses a variable and a secret of one name. Remove it from [vars]",
      "Nothing was deployed or uploaded.",
    ]);
  });

  it("reads an unquoted number in [vars] as wrangler gives it, and says a bad one in one line", async () => {
    const good = configWith((toml) => toml.replace('TUNNEL_TIMEOUT_MS = "30000"', "TUNNEL_TIMEOUT_MS = 30000"));
    const passed = await deploy(["--config", good, "--var", `SENTRY_DSN:${DSN}`, "--dry-run", "--outdir", mkdtempSync(join(tmpdir(), "dry-run-"))], { CLOUDFLARE_API_TOKEN: "token" });
    expect(passed.status).toBe(0);
    const bad = configWith((toml) => toml.replace('TUNNEL_TIMEOUT_MS = "30000"', "TUNNEL_TIMEOUT_MS = 0"));
    const { status, lines } = await deploy(["--config", bad, "--var", `SENTRY_DSN:${DSN}`], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual(['Configuration: TUNNEL_TIMEOUT_MS must be a whole number above 0, got 0', "Nothing was deployed or uploaded."]);
  });

  it("refuses a deploy whose configuration leaves the request limiter out, naming the binding", async () => {
    const config = configWith((toml) => toml.replace(/\[\[ratelimits\]\]\nname = "TUNNEL_RATE_LIMITER"\n[^\n]*\n[^\n]*\n/, ""));
    expect(readFileSync(config, "utf8")).not.toContain('name = "TUNNEL_RATE_LIMITER"');
    const { status, lines } = await deploy(["--config", config, "--var", `SENTRY_DSN:${DSN}`], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([
      "Configuration: TUNNEL_RATE_LIMITER is not bound, so the requests one client sends to Sentry would have no limit: declare it in wrangler.toml " +
        "(each [env.*] section needs its own [[ratelimits]]), or set TUNNEL_RATE_LIMITING=off to run without limits on purpose",
      "Nothing was deployed or uploaded.",
    ]);
  });

  it.each([
    ["an analytics dataset", /\[\[analytics_engine_datasets\]\]\nbinding = "TUNNEL_ANALYTICS"\n[^\n]*\n/, 'TUNNEL_ANALYTICS = "off"', "TUNNEL_ANALYTICS is not a Workers Analytics Engine dataset (got \"off\"): pass a [[analytics_engine_datasets]] binding"],
    ["the spool's bucket", /\[\[r2_buckets\]\]\nbinding = "TUNNEL_SPOOL_BUCKET"\n[^\n]*\n/, 'TUNNEL_SPOOL_BUCKET = "tunnel-spool"', "TUNNEL_SPOOL_BUCKET is not an R2 bucket binding (got \"tunnel-spool\"): pass a [[r2_buckets]] binding"],
  ])("refuses text in [vars] where %s belongs, naming the variable", async (_binding, declared, text, refusal) => {
    const config = configWith((toml) => toml.replace(declared, "").replace("[vars]\n", `[vars]\n${text}\n`));
    expect(readFileSync(config, "utf8")).toContain(text);
    const { status, lines } = await deploy(["--config", config, "--var", `SENTRY_DSN:${DSN}`], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(1);
    expect(lines).toEqual([`Configuration: ${refusal}`, "Nothing was deployed or uploaded."]);
  });

  it.each([
    ["with a DSN", ["--var", `SENTRY_DSN:${DSN}`]],
    ["without one, said on purpose", ["--monitoring=off"]],
    ["without one, to another environment", ["--var", "SENTRY_ENVIRONMENT:staging"]],
  ])("goes on to wrangler with a token and a valid configuration %s (a dry run here)", async (_case, args) => {
    const { status, lines } = await deploy(["--dry-run", "--outdir", mkdtempSync(join(tmpdir(), "dry-run-")), ...args], { CLOUDFLARE_API_TOKEN: "token" });
    expect(status).toBe(0);
    expect(lines).toContain("--dry-run: exiting now.");
  });
});
