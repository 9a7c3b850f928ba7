import { mkdirSync, readFileSync, writeFileSync } from "node:fs";

import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { buildEnvelope } from "../support/envelopes";
import { eventually } from "../support/eventually";
import { FakeIngest } from "../support/fake-ingest";
import { fetchOnce } from "../support/http";
import { APP_TUNNEL, APP_DSN, bundleFixture, root, wranglerCompatibility } from "../support/worker";

/** The entry file of `docs/adopting.md`, exactly as the page gives it, in a project laid out as it says. */
function entryFromTheDocs(): string {
  const page = readFileSync(`${root}docs/adopting.md`, "utf8");
  const code = /```ts\n([\s\S]*?)```/.exec(page)?.[1];
  if (!code) throw new Error("docs/adopting.md has no ts block");
  // The page's project has app/ beside the entry; here the entry sits two folders down.
  mkdirSync(`${root}.cache/adopting`, { recursive: true });
  writeFileSync(`${root}.cache/adopting/worker.ts`, code.replaceAll('"./app/', '"../../app/'));
  return ".cache/adopting/worker.ts";
}

describe("the tunnel in another Worker, built from docs/adopting.md alone", () => {
  let ingest: FakeIngest;
  let miniflare: Miniflare;
  let origin: URL;
  beforeAll(async () => {
    ingest = await FakeIngest.start();
    const script = await bundleFixture(entryFromTheDocs());
    miniflare = new Miniflare({
      modules: [{ type: "ESModule", path: script }],
      ...wranglerCompatibility(),
      bindings: { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin, TUNNEL_TIMEOUT_MS: "1500", TUNNEL_SPOOL_RETRY_SECONDS: "1" },
      ratelimits: { TUNNEL_RATE_LIMITER: { namespace_id: "1001", simple: { limit: 1_000, period: 10 } } },
      analyticsEngineDatasets: { TUNNEL_ANALYTICS: { dataset: "tunnel_envelopes" } },
      queueProducers: { TUNNEL_SPOOL: { queueName: "tunnel-spool" } },
      queueConsumers: { "tunnel-spool": { maxBatchTimeout: 1 } },
      r2Buckets: ["TUNNEL_SPOOL_BUCKET"],
    });
    origin = await miniflare.ready;
  });
  afterAll(async () => {
    await miniflare?.dispose();
    await ingest?.stop();
  });

  const post = (body: Buffer) => fetchOnce(new URL(APP_TUNNEL, origin), { method: "POST", body: new Uint8Array(body) });

  it("forwards an envelope, byte for byte, and leaves every other path to the Worker", async () => {
    const { body } = buildEnvelope();
    expect((await post(body)).status).toBe(200);
    expect(ingest.deliveries.at(-1)!.body.equals(body)).toBe(true);
    expect(await (await fetchOnce(new URL("/", origin))).text()).toBe("Your app answers here.");
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
    await eventually(() => ingest.deliveries.some((delivery) => delivery.body.includes(id)), 15_000, 100);
  });
});
