// `npm run deploy`, after the build: checks what it can before anything is uploaded, deploys the
// bundle the build prepared, and only then uploads the source maps to Sentry and finalises the
// release, so that a failed deploy leaves no release behind. Extra arguments go to `wrangler
// deploy` (`--var NAME:VALUE`, `--env`), but for `--monitoring=off` and `--upstream-origin=on-purpose`,
// which are ours: a production deploy with an empty SENTRY_DSN, or with TUNNEL_UPSTREAM_ORIGIN set,
// is refused without them. Every failure is one line, never a stack trace.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

import type { Json } from "miniflare";

import { resolveRelease } from "./release.ts";
import { checkWorkerVariables } from "./worker-variables.ts";
import { optionOf, passedVars } from "./wrangler-arguments.ts";
import { wranglerWorker } from "./wrangler-config.ts";

/** Said by an operator who deploys to production without a DSN on purpose. */
const MONITORING_OFF = "--monitoring=off";
const monitoringOff = process.argv.includes(MONITORING_OFF);
/** Said by an operator who sends production's envelopes somewhere other than Sentry on purpose (a relay of their own). */
const UPSTREAM_ON_PURPOSE = "--upstream-origin=on-purpose";
const upstreamOnPurpose = process.argv.includes(UPSTREAM_ON_PURPOSE);
const passed = process.argv.slice(2).filter((arg) => arg !== MONITORING_OFF && arg !== UPSTREAM_ON_PURPOSE);
const problems: string[] = [];

try {
  if (!process.env.CLOUDFLARE_API_TOKEN && !loggedIn()) {
    problems.push("Cloudflare: not logged in. Run `npx wrangler login`, or set CLOUDFLARE_API_TOKEN.");
  }
  if (process.env.SENTRY_AUTH_TOKEN) {
    for (const name of ["SENTRY_ORG", "SENTRY_PROJECT"]) {
      if (!process.env[name]) problems.push(`Sentry: ${name} is not set; source maps need it with SENTRY_AUTH_TOKEN.`);
    }
  }
  if (!existsSync("build/index.js")) problems.push("Build: build/index.js is missing; `npm run deploy` builds it first.");
  else {
    const configProblem = await workerConfigProblem();
    if (configProblem) problems.push(`Configuration: ${configProblem}`);
  }
} catch (error) {
  problems.push(`Checks: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
}
if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error("Nothing was deployed or uploaded.");
  process.exit(1);
}

if (!run("wrangler", ["deploy", ...passed])) {
  console.error("wrangler deploy failed (above); no release was made in Sentry.");
  process.exit(1);
}

if (process.env.SENTRY_AUTH_TOKEN) {
  const release = resolveRelease();
  const uploaded =
    run("sentry-cli", ["releases", "new", release]) &&
    run("sentry-cli", ["sourcemaps", "upload", "--release", release, "public/build", "build"]) &&
    run("sentry-cli", ["releases", "finalize", release]);
  if (!uploaded) {
    console.error(`The Worker is deployed, but the source maps of release ${release} were not uploaded (above); run \`npm run deploy\` again to retry.`);
    process.exit(1);
  }
} else {
  console.warn("SENTRY_AUTH_TOKEN is not set: source maps are not uploaded, stack traces stay minified.");
}

/** Whether wrangler has a login saved where it keeps one. */
function loggedIn(): boolean {
  const base = process.env.XDG_CONFIG_HOME ?? join(homedir(), ".config");
  return [join(base, ".wrangler", "config", "default.toml"), join(homedir(), ".wrangler", "config", "default.toml")].some(existsSync);
}

/**
 * Reads the variables the deploy would give the Worker as the Worker does when it starts (the
 * check `npm start` makes too), so a bad one is refused here, with its name, instead of after the
 * upload. An empty SENTRY_DSN is valid, and turns all monitoring off: in production, only on purpose.
 */
async function workerConfigProblem(): Promise<string | undefined> {
  const configPath = optionOf(passed, ["--config", "-c"]);
  const environment = optionOf(passed, ["--env", "-e"]);
  const worker = wranglerWorker(configPath ?? "wrangler.toml", environment);
  const shared = sharedNamespace(Object.entries(worker.ratelimits).map(([name, { namespace_id }]) => ({ name, namespace_id })));
  if (shared) return shared;
  // As wrangler gives them: an unquoted number or boolean in [vars] stays one.
  const vars: Record<string, Json> = { ...worker.bindings, ...passedVars(passed) };
  const checked = await checkWorkerVariables(vars, worker);
  if ("problem" in checked) return checked.problem;
  // The Worker's own reading: its environment's default, the origin it would send to.
  const { sentry, upstreamOrigin } = checked.config;
  const production = sentry.environment === "production";
  const dsnUnset = sentry.dsn === undefined;
  // Refused for production unless said on purpose, or unless the Worker keeps its DSN as a secret.
  const refusedUnlessSecret = dsnUnset && production && !monitoringOff;
  const secrets = dsnUnset ? workerSecretNames(configPath, environment) : { names: [] };
  // Secrets that cannot be read matter only where they would lift the refusal.
  if ("problem" in secrets && refusedUnlessSecret) return secrets.problem;
  const dsnIsSecret = "names" in secrets && secrets.names.includes("SENTRY_DSN");
  if (dsnIsSecret && "SENTRY_DSN" in vars) {
    return "SENTRY_DSN is a secret of the deployed Worker and also a variable ([vars] or --var): Cloudflare refuses a variable and a secret of one name. Remove it from [vars]";
  }
  if (upstreamOrigin !== undefined && production && !upstreamOnPurpose) {
    return (
      `TUNNEL_UPSTREAM_ORIGIN is set to ${upstreamOrigin}, so every envelope and the Worker's own events would go there instead of to Sentry: ` +
      `it is for development. Remove it from [vars], or deploy with it on purpose: npm run deploy -- ${UPSTREAM_ON_PURPOSE}`
    );
  }
  if (refusedUnlessSecret && !dsnIsSecret) {
    return (
      "SENTRY_DSN is empty, so the deployed pages and Worker would report nothing to Sentry. Set it in wrangler.toml's [vars] " +
      `or with --var SENTRY_DSN:<your project's DSN>, or deploy without monitoring on purpose: npm run deploy -- ${MONITORING_OFF}`
    );
  }
  if (dsnIsSecret) console.log("SENTRY_DSN: a secret of the deployed Worker, whose value only the Worker reads; it is checked when the Worker starts.");
  return undefined;
}

/**
 * The names of the deployed Worker's secrets (`wrangler secret list`), where a DSN may be kept
 * instead of `[vars]`. None for a Worker not deployed yet; a problem when Cloudflare cannot be asked.
 */
function workerSecretNames(configPath: string | undefined, environment: string | undefined): { names: string[] } | { problem: string } {
  const args = ["secret", "list", "--format", "json", ...(configPath ? ["--config", configPath] : []), ...(environment ? ["--env", environment] : [])];
  const listed = spawnSync("wrangler", args, { encoding: "utf8" });
  if (listed.status === 0) {
    try {
      return { names: (JSON.parse(listed.stdout) as { name: string }[]).map(({ name }) => name) };
    } catch {
      // Said below.
    }
  }
  const said = `${listed.stdout}${listed.stderr}`;
  // A first deploy: there is no Worker yet, and so no secret.
  if (/\[code: 10007\]|does not exist|not found/i.test(said)) return { names: [] };
  const why = said.split("\n").find((line) => line.includes("ERROR"))?.replace(/^.*\[ERROR\]\s*/, "") ?? `exit ${listed.status}`;
  return { problem: `SENTRY_DSN is empty, and whether the deployed Worker keeps it as a secret could not be read (wrangler secret list: ${why.trim()})` };
}

/**
 * Rate limiters with one `namespace_id` share their counters. The request limiter and the client's
 * spool budget both count by the client's address, so sharing one would make every stored 256 KiB
 * spend a client's requests, and the other way round.
 */
function sharedNamespace(limiters: readonly { name: string; namespace_id: string }[]): string | undefined {
  const byNamespace = new Map<string, string>();
  for (const { name, namespace_id } of limiters) {
    const other = byNamespace.get(namespace_id);
    if (other) return `${other} and ${name} share the [[ratelimits]] namespace_id ${namespace_id}, and so their counts: give each one of its own (docs/operating.md)`;
    byNamespace.set(namespace_id, name);
  }
  return undefined;
}

function run(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: "inherit" }).status === 0;
}
