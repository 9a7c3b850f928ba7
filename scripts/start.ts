// `npm start`: the production build in `wrangler dev`, with Spotlight as the local Sentry inbox.
// `npm run dev` (`--dev`): the same, rebuilt on every save, the open page reloading itself.
// The tunnel and the Worker's own SDK send to Spotlight instead of Sentry. Ctrl-C stops everything.
import { spawn, type ChildProcess } from "node:child_process";
import { cpSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

import type { AppConfig } from "../app/config.server";
import { SPOTLIGHT_ERRORS_PATH } from "../app/monitoring/local-defaults.ts";
import { buildIsCurrent, listening, localVariables, portFrom, unsetLocalDefaults } from "./local-settings.ts";
import { checkWorkerVariables, localWorkerVariables } from "./worker-variables.ts";
import { wranglerWorker } from "./wrangler-config.ts";

const dev = process.argv.includes("--dev");
const command = dev ? "npm run dev" : "npm start";
const env = { ...process.env, WRANGLER_SEND_METRICS: "false" };
/** The processes that run; any one ending stops the rest. */
const children: ChildProcess[] = [];
/** `npm run dev`'s Worker, which wrangler runs inside this process. */
let devWorker: Awaited<ReturnType<typeof import("wrangler").unstable_startWorker>> | undefined;
let stopping = false;

const appPort = portOrExit("PORT", 8787);
const spotlightPort = portOrExit("SPOTLIGHT_PORT", 8969);
// Before anything is built: a taken port is said at once, with the way around it.
for (const [port, what, variable] of [
  [appPort, "the app", "PORT"],
  [spotlightPort, "Spotlight", "SPOTLIGHT_PORT"],
] as const) {
  if (await listening(port)) {
    console.error(`Port ${port} (${what}) is taken. Stop what uses it, or choose another: ${variable}=${port + 1} ${command}`);
    process.exit(1);
  }
}

// Settings the developer has not made get local defaults, for wrangler only.
const spotlightOrigin = `http://localhost:${spotlightPort}`;
const developer = localVariables();
const unset = unsetLocalDefaults(spotlightOrigin, new Set(Object.keys(developer)));
// Read as the Worker will read them, before anything is built or started: a bad one is one line
// of ours, rather than wrangler's account of a runtime that failed to start.
const declared = wranglerWorker();
const checked = await checkWorkerVariables(localWorkerVariables(declared, developer, unset), declared);
if ("problem" in checked) {
  console.error(`Configuration: ${checked.problem}`);
  process.exit(1);
}
const workerConfig = checked.config;
process.on("SIGINT", () => stopAll(0));
process.on("SIGTERM", () => stopAll(0));

if (dev) await run("node", ["scripts/release.ts"]);
else if (buildIsCurrent()) console.log("The production build is up to date with the sources and the commit: not building again.");
else await run("npm", ["run", "build", "--silent"]);

startSpotlight();
if (dev) {
  await startDevLoop().catch((error: Error & { cause?: Error }) => {
    console.error(`wrangler could not start the app: ${error.cause?.message ?? error.message}`);
    stopAll(1);
  });
} else {
  const vars = unset.flatMap(([name, value]) => ["--var", `${name}:${value}`]);
  supervise(spawn("wrangler", ["dev", "--port", String(appPort), ...vars], { stdio: "inherit", env }));
  void whenServing(appPort).then(() => sayWhatToOpen(workerConfig));
}

/**
 * Resolves once the app serves a file on `port` (wrangler's proxy listens before the Worker is up);
 * polls while the app is starting, and stops when everything does.
 */
async function whenServing(port: number): Promise<void> {
  const serves = () =>
    fetch(`http://localhost:${port}/favicon.svg`, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.ok,
      () => false,
    );
  while (!stopping && !(await serves())) await new Promise((resolve) => setTimeout(resolve, 250));
}

/** The pages a developer opens first, once the app answers: the self-test, and where its reports land. */
function sayWhatToOpen(config: AppConfig): void {
  if (stopping) return;
  const app = `http://localhost:${appPort}`;
  const pages: [string, string][] = [[`${app}/`, "the home page"]];
  if (config.selfTest) pages.push([`${app}/sentry-example-page`, "the self-test: each button sends an error, a trace or a log"]);
  if (config.upstreamOrigin === spotlightOrigin) pages.push([`${spotlightOrigin}${SPOTLIGHT_ERRORS_PATH}`, "Spotlight: what the app reported, locally"]);
  else pages.push([config.upstreamOrigin ?? "Sentry", "where reports go, not Spotlight: TUNNEL_UPSTREAM_ORIGIN is set"]);
  const width = Math.max(...pages.map(([url]) => url.length));
  console.log(`\nOpen:\n${pages.map(([url, what]) => `  ${url.padEnd(width)}  ${what}`).join("\n")}\n`);
}

function portOrExit(variable: string, fallback: number): number {
  const chosen = portFrom(variable, fallback);
  if ("port" in chosen) return chosen.port;
  console.error(chosen.problem);
  process.exit(1);
}

/**
 * Spotlight fetches an error's source files back before listing it: its lookups wait in Node's four
 * threads behind its telemetry's, 5 s to fail offline, and the preloaded cache answers the same
 * file asked once per frame (README, Troubleshooting).
 */
function startSpotlight(): void {
  const sourceCache = new URL("spotlight-source-cache.ts", import.meta.url).href;
  supervise(
    spawn("spotlight", ["server", "--port", String(spotlightPort)], {
      stdio: "inherit",
      env: { ...env, UV_THREADPOOL_SIZE: "64", NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${sourceCache}`.trim() },
    }),
  );
}

function supervise(child: ChildProcess): ChildProcess {
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

function stopAll(code: number): void {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  void devWorker?.dispose();
  process.exitCode = code;
}

/**
 * `npm run dev`: `remix watch` builds into `.dev/` (remix.config.js), never over `build/`, and
 * wrangler runs that build with its own watcher off: told once per finished rebuild (Remix writes a
 * dozen files each), it restarts once and reloads the open page. Only `unstable_startWorker` (pinned
 * with wrangler) offers that. wrangler bundles the dependencies Remix leaves out, minified but
 * keeping names: Miniflare copies its config per 4 KiB after the script on each restart
 * (cloudflare/workers-sdk#15271). The timings that chose this: `git show f35ba95`.
 */
async function startDevLoop(): Promise<void> {
  const remix = supervise(spawn("remix", ["watch"], { stdio: ["ignore", "pipe", "inherit"], env: { ...env, NODE_ENV: "development" } }));
  let firstBuilt = () => {};
  const firstBuild = new Promise<void>((resolve) => (firstBuilt = resolve));
  let builds = 0;
  let reloading: Promise<unknown> = Promise.resolve();
  // One restart at a time, in the order the builds finished: the last one serves the last save.
  const reload = () => {
    reloading = reloading.then(() => devWorker!.patchConfig({})).catch((error: Error) => console.error(`wrangler did not reload: ${error.message}`));
  };
  createInterface({ input: remix.stdout! }).on("line", (line) => {
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
  const worker = await unstable_startWorker({
    config: "wrangler.toml",
    entrypoint: ".dev/build/index.js",
    assets: ".dev/public",
    bindings: Object.fromEntries(unset.map(([name, value]) => [name, { type: "plain_text", value }])),
    build: { bundle: true, minify: true },
    dev: { watch: false, liveReload: true, server: { port: appPort } },
  });
  devWorker = worker;
  await worker.ready;
  sayWhatToOpen(workerConfig);
  // A save while wrangler was starting: the Worker it started may predate that build.
  if (builds > 1) reload();
}

function run(program: string, args: string[]): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(program, args, { stdio: "inherit", env });
    child.on("exit", (code) => {
      if (code === 0) return resolve();
      console.error(`${program} ${args.join(" ")} failed (exit ${code}).`);
      process.exit(code ?? 1);
    });
  });
}
