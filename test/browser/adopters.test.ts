import { execFile } from "node:child_process";
import { lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
import { bundleFixture, root } from "../support/workerd";
import { packTheTunnel, README, readmeBlock } from "../support/package-readme";
import { startWranglerDev, type DevServer } from "../support/wrangler-dev";

const run = promisify(execFile);
const rootPackage = JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { devDependencies: Record<string, string> };

/** Where the README's full Worker leaves an adopter's own queues, and what the test's adopter does there: it logs each message and acknowledges it. */
const OWN_QUEUES_COMMENT = "// Your own queues' batches: handle them here.";
const OWN_QUEUE_HANDLING = "for (const message of batch.messages) { console.log(JSON.stringify({ own_queue: message.body })); message.ack(); }";

/**
 * Sentry's hosts, reached at the loopback stand-in (`INGEST_ORIGIN`) instead: imported before the
 * README's Worker, so that the `fetch` the tunnel takes when it loads is this one. The README's
 * code is left as it is: the minimal Worker has no setting for another upstream, and needs none.
 */
const TO_THE_STAND_IN = `import { env } from "cloudflare:workers";

const runtimeFetch = globalThis.fetch.bind(globalThis);
globalThis.fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!url.hostname.endsWith(".sentry.io")) return runtimeFetch(input, init);
  return runtimeFetch(new Request(\`\${String(Reflect.get(env, "INGEST_ORIGIN"))}\${url.pathname}\${url.search}\`, input instanceof Request ? input : init), input instanceof Request ? undefined : init);
};
`;

/**
 * An adopter's Worker around the README's entry (`readme-worker.ts`): one route of its own that
 * sends a message to a queue of its own, which the README's `queue()` then hands to the adopter's code.
 */
const WITH_A_QUEUE_OF_ITS_OWN = `import "./to-the-stand-in";
import readme from "./readme-worker";

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
  { name: "minimal", entry: readmeBlock("## A minimal Worker", "ts"), toml: readmeBlock("## A minimal Worker", "toml"), spool: false },
  { name: "full", entry: readmeBlock("## The full Worker", "ts"), toml: readmeBlock("## The full Worker", "toml"), spool: true },
];

/** The README's test of an adopter's own Worker, run in the full Worker's project with vitest. */
const ADOPTERS_TEST = readmeBlock("## Testing your Worker", "ts");
/** The README's page script, bundled with the SDK the page would have. */
const PAGE_SCRIPT = readmeBlock("**The page side.**", "ts");

/**
 * A new project outside this one, so that nothing of ours resolves from above it: the README's
 * entry and its whole \`wrangler.toml\` (the name and date as given), the tarball installed with
 * npm, \`wrangler types\` for its \`Env\`, \`@tsconfig/strictest\`, and vitest for the README's test.
 */
async function adoptersProject(adopter: (typeof ADOPTERS)[number], tarball: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), `adopter-${adopter.name}-`));
  writeFileSync(join(dir, "wrangler.toml"), `${adopter.toml}${adopter.spool ? OWN_QUEUE_TOML : ""}`);
  if (adopter.spool && !adopter.entry.includes(OWN_QUEUES_COMMENT)) throw new Error(`the README's ${adopter.name} entry no longer says "${OWN_QUEUES_COMMENT}"`);
  writeFileSync(join(dir, "readme-worker.ts"), adopter.entry.replace(OWN_QUEUES_COMMENT, OWN_QUEUE_HANDLING));
  writeFileSync(join(dir, "to-the-stand-in.ts"), TO_THE_STAND_IN);
  writeFileSync(join(dir, "worker.ts"), adopter.spool ? WITH_A_QUEUE_OF_ITS_OWN : 'import "./to-the-stand-in";\nexport { default } from "./readme-worker";\n');
  if (adopter.spool) writeFileSync(join(dir, "tunnel.test.ts"), ADOPTERS_TEST);
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      name: `adopter-${adopter.name}`,
      private: true,
      type: "module",
      dependencies: { "@edge-monitoring/tunnel": `file:${tarball}` },
      devDependencies: {
        "@tsconfig/strictest": rootPackage.devDependencies["@tsconfig/strictest"],
        ...(adopter.spool ? { vitest: rootPackage.devDependencies["vitest"] } : {}),
      },
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

describe("the package README's code", () => {
  it("runs every TypeScript and TOML block below, or says of one that it is not run as written", () => {
    const run = new Set([...ADOPTERS.flatMap(({ entry, toml }) => [entry, toml]), ADOPTERS_TEST, PAGE_SCRIPT]);
    const blocks = [...README.matchAll(/```(ts|toml)\n([\s\S]*?)```/g)].map((match) => ({ code: match[2]!, before: README.slice(Math.max(0, match.index - 200), match.index) }));
    const unaccounted = blocks.filter(({ code, before }) => !run.has(code) && !before.includes("Not run as written"));
    expect(unaccounted.map(({ code }) => code.split("\n")[0])).toEqual([]);
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
    [dir, ingest] = await Promise.all([adoptersProject(adopter, tarball), FakeIngest.start()]);
    server = await startWranglerDev({ SENTRY_DSN: APP_DSN, INGEST_ORIGIN: ingest.origin, TUNNEL_TIMEOUT_MS: "1500", TUNNEL_SPOOL_RETRY_SECONDS: "1" }, { project: dir });
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

  it("delivers an error from the README's page script, a stock SDK 11 that says tunnel: true", async () => {
    const page = await newVisitor(browser);
    const posted: string[] = [];
    page.on("request", (request) => void (request.method() === "POST" && posted.push(new URL(request.url()).pathname)));
    await page.goto(`${server.origin}/`, { waitUntil: "load" });
    // The page script as the README gives it, with this project's DSN, the SDK under the name the
    // project installs its 11 line by, and an error to report.
    const script = PAGE_SCRIPT.replace('"@sentry/browser"', '"sentry-browser-11"').replace(/dsn: "[^"]+"/, `dsn: "${APP_DSN}"`);
    const bundled = await bundleFixture(`readme-page-${adopter.name}.ts`, `${script}\nSentry.captureException(new Error("The README's page script"));\n`);
    await page.addScriptTag({ content: readFileSync(bundled, "utf8"), type: "module" });

    const delivered = () => ingest.deliveries.find((delivery) => delivery.body.includes("The README's page script"));
    await eventually(() => delivered() !== undefined, 15_000);
    expect(delivered()!.url).toBe("/api/4502/envelope/?hsts=0");
    // Chromium reports the request over its protocol, which may arrive after the ingest has the envelope.
    await eventually(() => posted.includes(getTunnelPath(APP_DSN)!), 5_000, { saw: () => posted });
    await page.close();
  });

  it.runIf(adopter.spool)("passes the README's own test of an adopter's Worker, run with vitest", async () => {
    const tested = await run(process.execPath, [join(dir, "node_modules/vitest/vitest.mjs"), "run"], { cwd: dir }).then(
      ({ stdout }) => stdout,
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ""}${error.stderr ?? String(error)}`,
    );
    expect(tested).toMatch(/1 passed/);
  });

  it.runIf(adopter.spool)("keeps the messages of a queue of its own: the tunnel takes only its spool's batches", async () => {
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
