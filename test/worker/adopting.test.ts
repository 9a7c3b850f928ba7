import { execFile } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { buildEnvelope } from "../support/envelopes";
import { eventually } from "../support/eventually";
import { FakeIngest } from "../support/fake-ingest";
import { APP_DSN, APP_ROUTE } from "../support/worker";
import { root, startFixture, type Workerd } from "../support/workerd";

/** The adopter's project, as `docs/adopting.md` lays it out: `tunnel/` beside the entry. */
const PROJECT = ".cache/adopting";

/** The entry of `docs/adopting.md`, exactly as the page gives it. */
function entryFromTheDocs(): string {
  const code = /```ts\n([\s\S]*?)```/.exec(readFileSync(`${root}docs/adopting.md`, "utf8"))?.[1];
  if (!code) throw new Error("docs/adopting.md has no ts block");
  return code;
}

/**
 * Step 2's `npx wrangler types`, for the bindings and variables the page says to copy: the one
 * required binding, the spool's, and the DSN.
 */
const ADOPTERS_ENV = `interface Env {
  TUNNEL_RATE_LIMITER: RateLimit;
  TUNNEL_ANALYTICS: AnalyticsEngineDataset;
  TUNNEL_SPOOL: Queue;
  TUNNEL_SPOOL_BUCKET: R2Bucket;
  SENTRY_DSN: string;
}
declare namespace Cloudflare {
  interface Env extends globalThis.Env {}
}
`;

/** The page's steps 1 to 3, and nothing else: `app/tunnel/` alone, the generated `Env`, the entry. */
function adoptersProject(): void {
  rmSync(`${root}${PROJECT}`, { recursive: true, force: true });
  mkdirSync(`${root}${PROJECT}`, { recursive: true });
  cpSync(`${root}app/tunnel`, `${root}${PROJECT}/tunnel`, { recursive: true, filter: (source) => !/\.(test|workerd)\.ts$/.test(source) });
  writeFileSync(`${root}${PROJECT}/worker-configuration.d.ts`, ADOPTERS_ENV);
  writeFileSync(`${root}${PROJECT}/worker.ts`, entryFromTheDocs());
  // Strict, as this project is; the packages are found in this project's node_modules, above.
  writeFileSync(
    `${root}${PROJECT}/tsconfig.json`,
    JSON.stringify({
      include: ["**/*.ts"],
      compilerOptions: { strict: true, noEmit: true, target: "ES2022", module: "ESNext", moduleResolution: "Bundler", lib: ["ES2023"], types: ["@cloudflare/workers-types"], skipLibCheck: true },
    }),
  );
}

describe("the tunnel in another Worker, from a copy of app/tunnel/ alone, as docs/adopting.md says", () => {
  let ingest: FakeIngest;
  let worker: Workerd;
  beforeAll(async () => {
    adoptersProject();
    ingest = await FakeIngest.start();
    worker = await startFixture(`${PROJECT}/worker.ts`, {
      bindings: { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin, TUNNEL_TIMEOUT_MS: "1500", TUNNEL_SPOOL_RETRY_SECONDS: "1" },
      ratelimits: { TUNNEL_RATE_LIMITER: { namespace_id: "1001", simple: { limit: 1_000, period: 10 } } },
      analyticsEngineDatasets: { TUNNEL_ANALYTICS: { dataset: "tunnel_envelopes" } },
      queueProducers: { TUNNEL_SPOOL: { queueName: "tunnel-spool" } },
      queueConsumers: { "tunnel-spool": { maxBatchTimeout: 1 } },
      r2Buckets: ["TUNNEL_SPOOL_BUCKET"],
    });
  });
  afterAll(async () => {
    await worker?.dispose();
    await ingest?.stop();
  });

  it("type-checks in strict mode with nothing of this project's beside it", async () => {
    const tsc = `${root}node_modules/typescript/bin/tsc`;
    const checked = await promisify(execFile)(process.execPath, [tsc, "-p", `${root}${PROJECT}/tsconfig.json`]).then(
      () => "",
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(checked).toBe("");
  });

  const post = (body: Buffer) => worker.fetch(APP_ROUTE, { method: "POST", body: new Uint8Array(body) });

  it("forwards an envelope, byte for byte, on the route derived from the DSN, and leaves every other path to the Worker", async () => {
    const { body } = buildEnvelope();
    expect((await post(body)).status).toBe(200);
    expect(ingest.deliveries.at(-1)!.body.equals(body)).toBe(true);
    expect(await (await worker.fetch("/")).text()).toBe("Your app answers here.");
  });

  it("refuses an envelope for a DSN it may not forward", async () => {
    ingest.reset();
    const response = await post(buildEnvelope({ dsn: "https://ffffffffffffffffffffffffffffffff@o4501.ingest.us.sentry.io/4502" }).body);
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ reason: "dsn_not_allowed" });
    expect(ingest.arrivals).toBe(0);
  });

  it("stores what Sentry cannot take, and delivers it once Sentry is back", async () => {
    ingest.reset();
    ingest.respondWith((_request, response) => {
      response.writeHead(503);
      response.end();
    });
    const { id, body } = buildEnvelope();
    expect((await post(body)).status).toBe(202);
    ingest.reset();
    await eventually(() => ingest.deliveries.some((delivery) => delivery.body.includes(id)), 15_000, { pollMs: 100 });
  });
});
