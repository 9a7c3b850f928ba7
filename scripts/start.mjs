// `npm start`: the built app in `wrangler dev` on :8787, with Spotlight on :8969 as the local Sentry
// inbox. The tunnel and the Worker's own SDK send to Spotlight instead of Sentry. Ctrl-C stops both.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

const SPOTLIGHT = "http://localhost:8969";
/** A DSN of the SaaS shape that reaches nobody: with TUNNEL_UPSTREAM_ORIGIN set, it lands in Spotlight. */
const PLACEHOLDER_DSN = "https://localdev@o0.ingest.sentry.io/0";

const devVars = existsSync(".dev.vars") ? readFileSync(".dev.vars", "utf8") : "";
const definedInDevVars = (name) => new RegExp(`^\\s*${name}\\s*=`, "m").test(devVars);

// Settings the developer has not made in .dev.vars get local defaults, on this command line only.
const localDefaults = {
  SENTRY_DSN: PLACEHOLDER_DSN,
  SENTRY_ENVIRONMENT: "development",
  TUNNEL_UPSTREAM_ORIGIN: SPOTLIGHT,
};
const vars = Object.entries(localDefaults)
  .filter(([name]) => !definedInDevVars(name))
  .flatMap(([name, value]) => ["--var", `${name}:${value}`]);

const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };
const children = [
  spawn("spotlight", ["server", "--port", "8969"], { stdio: "inherit", env }),
  spawn("wrangler", ["dev", "--port", "8787", ...vars], { stdio: "inherit", env }),
];

let stopping = false;
function stopAll(code) {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  process.exitCode = code;
}
for (const child of children) {
  child.on("exit", (code) => stopAll(code ?? 0));
  child.on("error", (error) => {
    console.error(error.message);
    stopAll(1);
  });
}
process.on("SIGINT", () => stopAll(0));
process.on("SIGTERM", () => stopAll(0));
