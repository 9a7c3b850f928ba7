import { execFile } from "node:child_process";
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
import { bundleFixture, root, wranglerCompatibility } from "../support/workerd";
import { startWranglerDev, type DevServer } from "../support/wrangler-dev";

const run = promisify(execFile);
const README = readFileSync(`${root}packages/tunnel/README.md`, "utf8");
const rootPackage = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { devDependencies: Record<string, string> };

/** The README's code block that follows `marker`, exactly as the page gives it. */
function readmeBlock(marker: string, language: "ts" | "toml"): string {
  const from = README.indexOf(marker);
  const code = from === -1 ? undefined : new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(README.slice(from))?.[1];
  if (!code) throw new Error(`packages/tunnel/README.md has no ${language} block after "${marker}"`);
  return code;
}

/** Where the README's entries leave an adopter's own queues, and what the test's adopter does there: it logs each message and acknowledges it. */
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

/** The two Workers an adopter would write, each from the README alone. */
const ADOPTERS = [
  { name: "plain", entry: readmeBlock("A plain Worker", "ts"), dependencies: {} },
  { name: "hono", entry: readmeBlock("A Hono app", "ts"), dependencies: { hono: rootPackage.devDependencies["hono"]! } },
  { name: "typed-options", entry: readmeBlock("A Worker with typed options", "ts"), dependencies: {} },
];

/**
 * `npm pack` of the package, as it would be published: the one thing the adopters get of this
 * project. The tarball is the one file in a new folder; `--json` is not read, as npm 11 writes an
 * array there and npm 12 an object keyed by the package's name.
 */
async function packTheTunnel(into: string): Promise<string> {
  await run("npm", ["pack", "--pack-destination", into], { cwd: `${root}packages/tunnel` });
  const [tarball, ...others] = readdirSync(into).filter((name) => name.endsWith(".tgz"));
  if (!tarball || others.length > 0) throw new Error(`npm pack left ${[tarball, ...others].join(", ") || "no tarball"} in ${into}`);
  return join(into, tarball);
}

/**
 * A new project outside this one, so that nothing of ours resolves from above it: the README's
 * entry and `wrangler.toml` (beside the `name`, `main` and date every Worker has), the tarball
 * installed with npm, `wrangler types` for its `Env`, and `@tsconfig/strictest`.
 */
async function adoptersProject(adopter: (typeof ADOPTERS)[number], tarball: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `adopter-${adopter.name}-`));
  const { compatibilityDate } = wranglerCompatibility();
  writeFileSync(
    join(dir, "wrangler.toml"),
    `name = "adopter-${adopter.name}"\nmain = "worker.ts"\ncompatibility_date = "${compatibilityDate}"\n${readmeBlock("## `wrangler.toml`", "toml")}${OWN_QUEUE_TOML}`,
  );
  if (!adopter.entry.includes(OWN_QUEUES_COMMENT)) throw new Error(`the README's ${adopter.name} entry no longer says "${OWN_QUEUES_COMMENT}"`);
  writeFileSync(join(dir, "readme-worker.ts"), adopter.entry.replace(OWN_QUEUES_COMMENT, OWN_QUEUE_HANDLING));
  writeFileSync(join(dir, "worker.ts"), WITH_A_QUEUE_OF_ITS_OWN);
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      name: `adopter-${adopter.name}`,
      private: true,
      type: "module",
      dependencies: { "@edge-monitoring/tunnel": `file:${tarball}`, ...adopter.dependencies },
      devDependencies: { "@tsconfig/strictest": rootPackage.devDependencies["@tsconfig/strictest"] },
    }),
  );
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      extends: "@tsconfig/strictest/tsconfig.json",
      include: ["*.ts"],
      compilerOptions: { noEmit: true, target: "ES2022", module: "ESNext", moduleResolution: "Bundler", lib: ["ES2023"], types: [] },
    }),
  );
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: dir });
  await run(`${root}node_modules/.bin/wrangler`, ["types"], { cwd: dir, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
  return dir;
}

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
    [dir, ingest] = await Promise.all([adoptersProject(adopter, tarball), FakeIngest.start()]);
    server = await startWranglerDev({ SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin, TUNNEL_TIMEOUT_MS: "1500", TUNNEL_SPOOL_RETRY_SECONDS: "1" }, { project: dir });
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

  it("delivers an error from a stock SDK 11 page that says tunnel: true", async () => {
    const page = await newVisitor(browser);
    const posted: string[] = [];
    page.on("request", (request) => void (request.method() === "POST" && posted.push(new URL(request.url()).pathname)));
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    await page.addScriptTag({ content: readFileSync(await bundleFixture("test/browser/fixtures/sentry-tunnel-true.ts"), "utf8"), type: "module" });
    await page.waitForFunction(() => "reportWithTunnelTrue" in window);
    await page.evaluate((dsn) => window.reportWithTunnelTrue(dsn), APP_DSN);

    const delivered = () => ingest.deliveries.find((delivery) => delivery.body.includes("A stock SDK 11 page with tunnel: true"));
    await eventually(() => delivered() !== undefined, 15_000);
    expect(delivered()!.url).toBe("/api/4502/envelope/?hsts=0");
    expect(posted).toContain(getTunnelPath(APP_DSN));
    await page.close();
  });

  it("delivers an error from a stock SDK 10 page given tunnelUrlFor's URL", async () => {
    const page = await newVisitor(browser);
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    await page.addScriptTag({ content: readFileSync(await bundleFixture("test/browser/fixtures/sentry-10-tunnel-url.ts"), "utf8"), type: "module" });
    await page.waitForFunction(() => "reportWithTunnelUrl" in window);
    expect(await page.evaluate((dsn) => window.reportWithTunnelUrl(dsn), APP_DSN)).toBe(APP_ROUTE);

    const delivered = () => ingest.deliveries.find((delivery) => delivery.body.includes("A stock SDK 10 page with tunnelUrlFor's URL"));
    await eventually(() => delivered() !== undefined, 15_000);
    expect(delivered()!.url).toBe("/api/4502/envelope/?hsts=0");
    await page.close();
  });

  it("keeps the messages of a queue of its own: the tunnel takes only its spool's batches", async () => {
    const message = `own-${Date.now()}`;
    expect(await (await fetch(`${server.origin}/?own-queue=${message}`)).text()).toBe("queued");
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

  it("stores an envelope while the ingest is down, and delivers it once the ingest is back", async () => {
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
