// `npm start`: the production build in `wrangler dev`, with Spotlight as the local Sentry inbox.
// `npm run dev` (`--dev`): the same, rebuilt on every save, the open page reloading itself.
// The tunnel and the Worker's own SDK send to Spotlight instead of Sentry. Ctrl-C stops everything.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";

import { resolveRelease } from "./release.mjs";

const dev = process.argv.includes("--dev");
const appPort = portFrom("PORT", 8787);
const spotlightPort = portFrom("SPOTLIGHT_PORT", 8969);
const spotlight = `http://localhost:${spotlightPort}`;
/** A DSN of the SaaS shape that reaches nobody: with TUNNEL_UPSTREAM_ORIGIN set, it lands in Spotlight. */
const PLACEHOLDER_DSN = "https://localdev@o0.ingest.sentry.io/0";

// Before anything is built: a taken port is said at once, with the way around it.
for (const [port, what, variable] of [
  [appPort, "the app", "PORT"],
  [spotlightPort, "Spotlight", "SPOTLIGHT_PORT"],
]) {
  if (await listening(port)) {
    console.error(`Port ${port} (${what}) is taken. Stop what uses it, or choose another: ${variable}=${port + 1} npm ${dev ? "run dev" : "start"}`);
    process.exit(1);
  }
}

// Settings the developer has not made get local defaults, on wrangler's command line only.
const defined = localVariableNames();
const localDefaults = { SENTRY_DSN: PLACEHOLDER_DSN, SENTRY_ENVIRONMENT: "development", TUNNEL_UPSTREAM_ORIGIN: spotlight };
const vars = Object.entries(localDefaults)
  .filter(([name]) => !defined.has(name))
  .flatMap(([name, value]) => ["--var", `${name}:${value}`]);

const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };
if (dev || !buildIsCurrent()) await run("npm", ["run", "build", "--silent"]);
else console.log("The production build is up to date with the sources and the commit: not building again.");

const children = [
  // Spotlight resolves the app's host to fetch a browser error's source lines back; in Node's
  // default pool of four threads those lookups wait behind its own telemetry's, which take 5 s
  // to fail offline (README, Troubleshooting).
  spawn("spotlight", ["server", "--port", String(spotlightPort)], { stdio: "inherit", env: { ...env, UV_THREADPOOL_SIZE: "64" } }),
  spawn("wrangler", ["dev", "--port", String(appPort), ...(dev ? ["--live-reload"] : []), ...vars], { stdio: "inherit", env }),
  // Development mode: unminified, rebuilt on every save; wrangler restarts the Worker on the new
  // build and reloads the open page.
  ...(dev ? [spawn("remix", ["watch"], { stdio: "inherit", env: { ...env, NODE_ENV: "development" } })] : []),
];

let stopping = false;
function stopAll(code) {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  process.exitCode = code;
}
for (const child of children) {
  child.on("exit", (code) => {
    if (!stopping) console.error(`${child.spawnargs[0]} stopped (exit ${code ?? "signal"}); stopping the rest.`);
    stopAll(stopping ? 0 : code || 1);
  });
  child.on("error", (error) => {
    console.error(error.message);
    stopAll(1);
  });
}
process.on("SIGINT", () => stopAll(0));
process.on("SIGTERM", () => stopAll(0));

function portFrom(variable, fallback) {
  const value = (process.env[variable] ?? "").trim();
  if (value === "") return fallback;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) {
    console.error(`${variable} must be a port number, got "${value}"`);
    process.exit(1);
  }
  return port;
}

/** Whether anything answers on the port, on IPv4 or IPv6 loopback (`localhost` may be either). */
async function listening(port) {
  const answers = (host) =>
    new Promise((resolve) => {
      const socket = connect({ host, port });
      socket.once("connect", () => resolve(socket.end() && true));
      socket.once("error", () => resolve(false));
    });
  return (await answers("127.0.0.1")) || (await answers("::1"));
}

/** The variables the developer set, where wrangler reads them: `.dev.vars`, or else `.env` and `.env.local`. */
function localVariableNames() {
  const files = existsSync(".dev.vars") ? [".dev.vars"] : [".env", ".env.local"].filter((file) => existsSync(file));
  const names = new Set();
  for (const file of files) {
    for (const match of readFileSync(file, "utf8").matchAll(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/gm)) names.add(match[1]);
  }
  return names;
}

/**
 * Whether `build/` was made from the sources as they are and for this commit's release, so that
 * `npm start` right after `npm test` or another `npm start` serves it without building again.
 */
function buildIsCurrent() {
  const built = "build/index.js";
  if (!existsSync(built) || !existsSync("app/release.generated.ts")) return false;
  const release = (() => {
    try {
      return resolveRelease();
    } catch {
      return undefined;
    }
  })();
  if (!release || !readFileSync("app/release.generated.ts", "utf8").includes(JSON.stringify(release))) return false;
  const builtAt = statSync(built).mtimeMs;
  const newer = (path) => {
    const stat = statSync(path);
    if (!stat.isDirectory()) return stat.mtimeMs > builtAt;
    return readdirSync(path).some((name) => path !== "public" || name !== "build" ? newer(join(path, name)) : false);
  };
  return !["app", "worker", "public", "remix.config.js", "package-lock.json"].some((path) => existsSync(path) && newer(path));
}

function run(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: "inherit", env });
    child.on("exit", (code) => {
      if (code === 0) return resolve();
      console.error(`${command} ${args.join(" ")} failed (exit ${code}).`);
      process.exit(code ?? 1);
    });
  });
}
