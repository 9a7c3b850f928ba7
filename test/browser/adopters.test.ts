import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { eventually } from "@edge-monitoring/tunnel/testing";
import type { Browser } from "playwright-core";
import { getTunnelPath } from "sentry-core-11";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { launchChromium, newVisitor } from "../support/chromium";
import { buildEnvelope } from "../support/envelopes";
import { FakeIngest } from "../support/fake-ingest";
import { APP_DSN, APP_ROUTE } from "../support/worker";
import { root } from "../support/workerd";
import { wranglerWorker } from "../../scripts/wrangler-config";
import { packTheTunnel, README, readmeBlock } from "../support/package-readme";
import { startWranglerDev, type DevServer } from "../support/wrangler-dev";

const run = promisify(execFile);
const rootPackage = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { devDependencies: Record<string, string> };
/** The esbuild an adopter's `npm install --save-dev esbuild` gets beside the vitest plugin: the plugin's own (this project pins an older one for Remix). */
const ADOPTERS_ESBUILD = (JSON.parse(readFileSync(createRequire(`${root}node_modules/@cloudflare/vitest-plugin/package.json`).resolve("esbuild/package.json"), "utf8")) as { version: string }).version;

/** Where the README's full Worker leaves an adopter's own queues, and what the test's adopter does there: it logs each message and acknowledges it. */
const OWN_QUEUES_COMMENT = "// Your own queues' batches: handle them here.";
const OWN_QUEUE_HANDLING = "for (const message of batch.messages) { console.log(JSON.stringify({ own_queue: message.body })); message.ack(); }";

/**
 * An adopter's Worker around the README's entry (`readme-worker.ts`): one route of its own that
 * sends a message to a queue of its own, which the README's `queue()` then hands to the adopter's code.
 */
const WITH_A_QUEUE_OF_ITS_OWN = `import readme from "./readme-worker";

const answer: ExportedHandlerFetchHandler<Env> = readme.fetch;

export default {
  ...readme,
  async fetch(request, env, context) {
    const own = new URL(request.url).searchParams.get("own-queue");
    if (own === null) return answer(request, env, context);
    await env.OWN_QUEUE.send(own);
    return new Response("queued");
  },
} satisfies ExportedHandler<Env>;
`;

const OWN_QUEUE_TOML = `
[[queues.producers]]
queue = "adopter-own"
binding = "OWN_QUEUE"

[[queues.consumers]]
queue = "adopter-own"
max_batch_timeout = 1
`;

/** The two Workers an adopter would write, each from the README alone: its \`worker.ts\` and its whole \`wrangler.toml\`. */
const ADOPTERS = [
  { name: "minimal", entry: readmeBlock("## A minimal Worker", "ts"), toml: readmeBlock("## A minimal Worker", "toml"), jsonc: readmeBlock("## A minimal Worker", "jsonc"), spool: false },
  { name: "full", entry: readmeBlock("## The full Worker", "ts"), toml: readmeBlock("## The full Worker", "toml"), jsonc: readmeBlock("## The full Worker", "jsonc"), spool: true },
];

/** What the README has an adopter write besides the Worker: the page's script and tag, `.dev.vars`, and the tests' builder, config and test. */
const PAGE_SCRIPT = readmeBlock("**The page side.**", "ts");
const PAGE_TAG = readmeBlock("Each page loads it as a module", "html");
const DEV_VARS = readmeBlock("`.dev.vars`, for `npx wrangler dev` only", "dotenv");
const BUILDER = readmeBlock("## Testing your Worker", "ts");
const VITEST_CONFIG = readmeBlock("`package.json`), which gives them", "ts");
const ADOPTERS_TEST = readmeBlock("`tunnel.test.ts`, run by `npx vitest`", "ts");
/** The README's own command for the page's script. */
const BUNDLE_COMMAND = /npx (esbuild page\.ts [^\n]+)/.exec(PAGE_SCRIPT)![1]!.split(" ");

/**
 * A new project outside this one, so that nothing of ours resolves from above it, from the README
 * alone: its entry and whole `wrangler.toml` (the name and date as given), `.dev.vars` with the
 * loopback ingest for Spotlight's origin, the page (its tag, and its script bundled by the README's
 * own command, reporting one error), the tests' builder, config and test, the tarball and the
 * README's other packages installed with npm, and `wrangler types` for its `Env`.
 */
async function adoptersProject(adopter: (typeof ADOPTERS)[number], tarball: string, ingest: FakeIngest): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `adopter-${adopter.name}-`));
  mkdirSync(join(dir, "public"));
  writeFileSync(join(dir, "wrangler.toml"), `${adopter.toml}${adopter.spool ? OWN_QUEUE_TOML : ""}`);
  writeFileSync(join(dir, ".dev.vars"), DEV_VARS.replace("http://localhost:8969", ingest.origin));
  if (adopter.spool && !adopter.entry.includes(OWN_QUEUES_COMMENT)) throw new Error(`the README's ${adopter.name} entry no longer says "${OWN_QUEUES_COMMENT}"`);
  if (adopter.spool) {
    writeFileSync(join(dir, "readme-worker.ts"), adopter.entry.replace(OWN_QUEUES_COMMENT, OWN_QUEUE_HANDLING));
    writeFileSync(join(dir, "worker.ts"), WITH_A_QUEUE_OF_ITS_OWN);
  } else {
    writeFileSync(join(dir, "worker.ts"), adopter.entry);
    writeFileSync(join(dir, "tunnel.ts"), BUILDER);
    writeFileSync(join(dir, "vitest.config.ts"), VITEST_CONFIG);
    writeFileSync(join(dir, "tunnel.test.ts"), ADOPTERS_TEST);
  }
  // The page's script with this project's DSN, and an error to report.
  writeFileSync(join(dir, "page.ts"), `${PAGE_SCRIPT.replace(/dsn: "[^"]+"/, `dsn: "${APP_DSN}"`)}\nSentry.captureException(new Error("The README's page script"));\n`);
  writeFileSync(join(dir, "public", "index.html"), PAGE_TAG);
  const versions = rootPackage.devDependencies;
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      name: `adopter-${adopter.name}`,
      private: true,
      type: "module",
      dependencies: { "@edge-monitoring/tunnel": `file:${tarball}`, "@sentry/browser": versions["sentry-browser-11"]!.replace("npm:@sentry/browser@", "") },
      devDependencies: {
        "@tsconfig/strictest": versions["@tsconfig/strictest"],
        esbuild: ADOPTERS_ESBUILD,
        ...(adopter.spool ? {} : { vitest: versions["vitest"], "@cloudflare/vitest-plugin": versions["@cloudflare/vitest-plugin"] }),
      },
    }),
  );
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      extends: "@tsconfig/strictest/tsconfig.json",
      include: ["*.ts"],
      exclude: ["page.ts"],
      compilerOptions: { noEmit: true, target: "ES2022", module: "ESNext", moduleResolution: "Bundler", lib: ["ES2023"], types: adopter.spool ? [] : ["@cloudflare/vitest-plugin/types"] },
    }),
  );
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: dir });
  await run(join(dir, "node_modules/.bin/esbuild"), BUNDLE_COMMAND.slice(1), { cwd: dir });
  await run(`${root}node_modules/.bin/wrangler`, ["types"], { cwd: dir, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
  return dir;
}

describe("the package README's code", () => {
  it("runs every TypeScript, TOML, JSONC, HTML and .dev.vars block below, or says of one that it is not run as written", () => {
    const run = new Set([...ADOPTERS.flatMap(({ entry, toml, jsonc }) => [entry, toml, jsonc]), PAGE_SCRIPT, PAGE_TAG, DEV_VARS, BUILDER, VITEST_CONFIG, ADOPTERS_TEST]);
    const blocks = [...README.matchAll(/```(ts|toml|jsonc|html|dotenv)\n([\s\S]*?)```/g)].map((match) => ({ code: match[2]!, before: README.slice(Math.max(0, match.index - 200), match.index) }));
    const unaccounted = blocks.filter(({ code, before }) => !run.has(code) && !before.includes("Not run as written"));
    expect(unaccounted.map(({ code }) => code.split("\n")[0])).toEqual([]);
  });

  it.each(ADOPTERS)("gives the $name Worker's wrangler.jsonc as the same configuration as its wrangler.toml, as wrangler reads them", ({ toml, jsonc }) => {
    const dir = mkdtempSync(join(tmpdir(), "readme-config-"));
    try {
      writeFileSync(join(dir, "wrangler.toml"), toml);
      writeFileSync(join(dir, "wrangler.jsonc"), jsonc);
      expect(wranglerWorker(join(dir, "wrangler.jsonc"))).toEqual(wranglerWorker(join(dir, "wrangler.toml")));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

let tarball: string;
let browser: Browser;
const packed = mkdtempSync(join(tmpdir(), "tunnel-tarball-"));
beforeAll(async () => {
  [tarball, browser] = await Promise.all([packTheTunnel(packed), launchChromium()]);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  rmSync(packed, { recursive: true, force: true });
});

describe.each(ADOPTERS)("an adopter's $name Worker, from the package's tarball alone, as its README says", { timeout: 60_000 }, (adopter) => {
  let dir: string;
  let ingest: FakeIngest;
  let server: DevServer;
  beforeAll(async () => {
    ingest = await FakeIngest.start();
    dir = await adoptersProject(adopter, tarball, ingest);
    server = await startWranglerDev({ SENTRY_DSN: APP_DSN, TUNNEL_TIMEOUT_MS: "1500", TUNNEL_SPOOL_RETRY_SECONDS: "1" }, { project: dir });
  }, 240_000);
  afterAll(async () => {
    await server?.stop();
    await ingest?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("has the tunnel from the tarball, and type-checks under @tsconfig/strictest", async () => {
    // Installed, not linked to this project's workspace.
    expect(lstatSync(join(dir, "node_modules/@edge-monitoring/tunnel")).isSymbolicLink()).toBe(false);
    const checked = await run(process.execPath, [`${root}node_modules/typescript/bin/tsc`, "-p", join(dir, "tsconfig.json")]).then(
      () => "",
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(checked).toBe("");
  });

  // The full Worker's page posts while Sentry is down, so the answer DevTools shows is the tunnel's own 202.
  it(`delivers an error from the README's page, its script a stock SDK 11 that says tunnel: true, to the .dev.vars' Sentry on this machine${adopter.spool ? ", kept while that Sentry is down" : ""}, and DevTools shows the post done`, async () => {
    if (adopter.spool) ingest.respondWith((_request, response) => void response.writeHead(503).end());
    const page = await newVisitor(browser);
    // Chromium's own network events, which DevTools' network panel draws: a post's status, then `finished` or why it failed.
    const network = await page.context().newCDPSession(page);
    const posted = new Map<string, { path: string; status?: number; ended?: string }>();
    network.on("Network.requestWillBeSent", ({ requestId, request }) => void (request.method === "POST" && posted.set(requestId, { path: new URL(request.url).pathname })));
    network.on("Network.responseReceived", ({ requestId, response }) => void (posted.has(requestId) && (posted.get(requestId)!.status = response.status)));
    network.on("Network.loadingFinished", ({ requestId }) => void (posted.has(requestId) && (posted.get(requestId)!.ended = "finished")));
    network.on("Network.loadingFailed", ({ requestId, errorText }) => void (posted.has(requestId) && (posted.get(requestId)!.ended = errorText)));
    await network.send("Network.enable");
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    const posts = () => [...posted.values()];
    await eventually(() => posts().length > 0 && posts().every(({ ended }) => ended !== undefined), 15_000, { saw: posts });
    expect(posts()).toEqual([{ path: getTunnelPath(APP_DSN), status: adopter.spool ? 202 : 200, ended: "finished" }]);
    // Sentry back: what arrives from now on is the spool's.
    if (adopter.spool) ingest.reset();
    const delivered = () => ingest.deliveries.find((delivery) => delivery.body.includes("The README's page script"));
    await eventually(() => delivered() !== undefined, 30_000, { pollMs: 200 });
    expect(delivered()!.url).toBe("/api/4502/envelope/?hsts=0");
    await page.close();
  });

  it.runIf(!adopter.spool)("passes the README's own test in workerd, with the README's vitest configuration", async () => {
    const tested = await run(process.execPath, [join(dir, "node_modules/vitest/vitest.mjs"), "run"], { cwd: dir }).then(
      ({ stdout }) => stdout,
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ""}${error.stderr ?? String(error)}`,
    );
    expect(tested).toMatch(/1 passed/);
  });

  it.runIf(adopter.spool)("keeps the messages of a queue of its own: the tunnel takes only its spool's batches", async () => {
    const message = `own-${Date.now()}`;
    // Not at `/`, which the README's page takes from the assets before the Worker is asked.
    expect(await (await fetch(`${server.origin}/own?own-queue=${message}`)).text()).toBe("queued");
    await eventually(() => server.output().includes(JSON.stringify({ own_queue: message })), 30_000, { pollMs: 200 });
  });

  it("refuses an envelope for a DSN it may not forward, and sends Sentry nothing", async () => {
    const before = ingest.arrivals;
    const foreign = buildEnvelope({ dsn: "https://ffffffffffffffffffffffffffffffff@o4501.ingest.us.sentry.io/4599" }).body;
    const response = await fetch(`${server.origin}${APP_ROUTE}`, { method: "POST", body: new Uint8Array(foreign) });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ reason: "dsn_not_allowed" });
    expect(ingest.arrivals).toBe(before);
  });

  it.runIf(adopter.spool)("stores an envelope while the ingest is down, and delivers it once the ingest is back", async () => {
    ingest.respondWith((_request, response) => {
      response.writeHead(503);
      response.end();
    });
    const { id, body } = buildEnvelope();
    const response = await fetch(`${server.origin}${APP_ROUTE}`, { method: "POST", body: new Uint8Array(body) });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ reason: "spooled" });
    // Back: every delivery from now on is the spool's, byte for byte.
    ingest.reset();
    await eventually(() => ingest.deliveries.some((delivery) => delivery.body.includes(id)), 30_000, { pollMs: 200 });
    expect(ingest.deliveries.find((delivery) => delivery.body.includes(id))!.body.equals(body)).toBe(true);
  });
});
