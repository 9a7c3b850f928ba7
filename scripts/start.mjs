// `npm start`: the production build in `wrangler dev`, with Spotlight as the local Sentry inbox.
// `npm run dev` (`--dev`): the same, rebuilt on every save, the open page reloading itself.
// The tunnel and the Worker's own SDK send to Spotlight instead of Sentry. Ctrl-C stops everything.
import { spawn } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";

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

// Settings the developer has not made get local defaults, for wrangler only.
const defined = localVariableNames();
const localDefaults = { SENTRY_DSN: PLACEHOLDER_DSN, SENTRY_ENVIRONMENT: "development", TUNNEL_UPSTREAM_ORIGIN: spotlight };
const unset = Object.entries(localDefaults).filter(([name]) => !defined.has(name));

const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };
/** The processes that run; any one ending stops the rest. */
const children = [];
/** `npm run dev`'s Worker, which wrangler runs inside this process. */
let devWorker;
let stopping = false;
process.on("SIGINT", () => stopAll(0));
process.on("SIGTERM", () => stopAll(0));

if (dev) await run("node", ["scripts/release.mjs"]);
else if (buildIsCurrent()) console.log("The production build is up to date with the sources and the commit: not building again.");
else await run("npm", ["run", "build", "--silent"]);

// Spotlight fetches a browser error's source files back from the app before it lists the error:
// its lookups of the app's host wait, in Node's default pool of four threads, behind its own
// telemetry's, which take 5 s to fail offline; and it fetches the same files once per stack frame,
// which the preloaded cache answers from memory (README, Troubleshooting).
const sourceCache = new URL("spotlight-source-cache.mjs", import.meta.url).href;
supervise(
  spawn("spotlight", ["server", "--port", String(spotlightPort)], {
    stdio: "inherit",
    env: { ...env, UV_THREADPOOL_SIZE: "64", NODE_OPTIONS: `${env.NODE_OPTIONS ?? ""} --import=${sourceCache}`.trim() },
  }),
);
if (dev) {
  await startDevLoop().catch((error) => {
    console.error(`wrangler could not start the app: ${error.cause?.message ?? error.message}`);
    stopAll(1);
  });
} else {
  const vars = unset.flatMap(([name, value]) => ["--var", `${name}:${value}`]);
  supervise(spawn("wrangler", ["dev", "--port", String(appPort), ...vars], { stdio: "inherit", env }));
}

function supervise(child) {
  children.push(child);
  child.on("exit", (code) => {
    if (!stopping) console.error(`${child.spawnargs[0]} stopped (exit ${code ?? "signal"}); stopping the rest.`);
    stopAll(stopping ? 0 : code || 1);
  });
  child.on("error", (error) => {
    console.error(error.message);
    stopAll(1);
  });
  return child;
}

function stopAll(code) {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  void devWorker?.dispose();
  process.exitCode = code;
}

/**
 * `npm run dev`: `remix watch` builds into `.dev/` (remix.config.js), never over the production build
 * in `build/`, and wrangler's dev server runs that build with its own file watcher off. Remix writes a
 * dozen files per rebuild and wrangler's watcher restarted the Worker for each (5.1 to 5.6 s from save
 * to page); told once per finished rebuild instead, it restarts once and reloads the open page.
 * wrangler offers that control only through `unstable_startWorker`, pinned with wrangler itself.
 */
async function startDevLoop() {
  const remix = supervise(spawn("remix", ["watch"], { stdio: ["ignore", "pipe", "inherit"], env: { ...env, NODE_ENV: "development" } }));
  let firstBuilt;
  const firstBuild = new Promise((resolve) => (firstBuilt = resolve));
  let builds = 0;
  let reloading = Promise.resolve();
  // One restart at a time, in the order the builds finished: the last one serves the last save.
  const reload = () => {
    reloading = reloading.then(() => devWorker.patchConfig({})).catch((error) => console.error(`wrangler did not reload: ${error.message}`));
  };
  createInterface({ input: remix.stdout }).on("line", (line) => {
    console.log(line);
    if (!line.includes("Rebuilt in")) return;
    builds += 1;
    if (builds === 1) firstBuilt();
    else if (devWorker) reload();
  });
  remix.once("exit", () => firstBuilt());
  await firstBuild;
  if (stopping) return;

  // The assets wrangler serves: the static files beside the development build of the browser's code.
  for (const name of readdirSync("public")) if (name !== "build") cpSync(join("public", name), join(".dev/public", name), { recursive: true });
  const { unstable_startWorker } = await import("wrangler");
  devWorker = await unstable_startWorker({
    config: "wrangler.toml",
    entrypoint: ".dev/build/index.js",
    assets: ".dev/public",
    bindings: Object.fromEntries(unset.map(([name, value]) => [name, { type: "plain_text", value }])),
    dev: { watch: false, liveReload: true, server: { port: appPort } },
  });
  await devWorker.ready;
  // A save while wrangler was starting: the Worker it started may predate that build.
  if (builds > 1) reload();
}

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
