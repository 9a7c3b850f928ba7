import { request as httpRequest } from "node:http";
import { gunzipSync, gzipSync } from "node:zlib";

import fc from "fast-check";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { buildEnvelope, parseEnvelope } from "../support/envelopes";
import { eventually, FakeIngest } from "../support/fake-ingest";
import { fetchOnce } from "../support/http";
import { APP_DSN, bundleFixture, startWorker, wranglerCompatibility, type RunningWorker } from "../support/worker";

const TUNNEL = "/monitoring?o=4501&p=4502&r=us";

/** A distinct envelope: its event id is how the ledger finds its delivery. */
const envelope = (size: number) => buildEnvelope({ attachmentBytes: size });

interface Sent {
  id: string;
  bytes: Buffer;
  status: number;
}

/** Sends every job with at most `concurrency` in flight; loopback only, and bounded by the job list. */
async function sendAll(jobs: (() => Promise<Sent>)[], concurrency: number): Promise<Sent[]> {
  const results: Sent[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < jobs.length) {
        const job = jobs[next++]!;
        results.push(await job());
      }
    }),
  );
  return results;
}

/** Every 2xx has exactly one byte-identical delivery; nothing else was delivered at all. */
function ledger(sent: readonly Sent[], ingest: FakeIngest) {
  const delivered = new Map<string, Buffer[]>();
  for (const delivery of ingest.deliveries) {
    const plain = delivery.headers["content-encoding"] === "gzip" ? gunzipSync(delivery.body) : delivery.body;
    const id = parseEnvelope(plain).header.event_id!;
    delivered.set(id, [...(delivered.get(id) ?? []), delivery.body]);
  }
  const accepted = sent.filter((item) => item.status >= 200 && item.status < 300);
  return {
    accepted: accepted.length,
    refused: sent.length - accepted.length,
    lost: accepted.filter((item) => delivered.get(item.id)?.length !== 1 || !delivered.get(item.id)![0]!.equals(item.bytes)).length,
    duplicated: [...delivered.values()].filter((copies) => copies.length > 1).length,
    deliveredWithoutAcceptance: sent.filter((item) => !(item.status >= 200 && item.status < 300) && delivered.has(item.id)).length,
    unknown: [...delivered.keys()].filter((id) => !sent.some((item) => item.id === id)).length,
  };
}

describe("abuse and faults, in workerd", () => {
  let ingest: FakeIngest;
  let worker: RunningWorker;
  beforeAll(async () => {
    ingest = await FakeIngest.start();
    // wrangler.toml's limit, without the spool: the stalled-answer test is about the live path.
    worker = await startWorker(
      { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin, TUNNEL_TIMEOUT_MS: "1500" },
      { spool: false },
    );
  });
  afterAll(async () => {
    await worker?.dispose();
    await ingest?.stop();
  });
  beforeEach(() => ingest.reset());

  const post = (body: Buffer, headers: Record<string, string>) =>
    worker.fetch(TUNNEL, { method: "POST", body: new Uint8Array(body), headers });

  it("loses and duplicates nothing: 600 envelopes, 32 at a time, from 120 clients", async () => {
    const items = Array.from({ length: 600 }, (_, index) => ({ ...envelope([200, 9_000, 70_000][index % 3]!), ip: `198.51.100.${index % 120}` }));
    const sent = await sendAll(
      items.map(({ id, body, ip }, index) => async () => {
        const compressed = index % 5 === 0;
        const bytes = compressed ? gzipSync(body) : body;
        const response = await post(bytes, { "cf-connecting-ip": ip, ...(compressed ? { "content-encoding": "gzip" } : {}) });
        await response.arrayBuffer();
        return { id, bytes, status: response.status };
      }),
      32,
    );
    const figures = ledger(sent, ingest);
    console.log(`load: ${JSON.stringify(figures)}`);
    expect(figures).toEqual({ accepted: 600, refused: 0, lost: 0, duplicated: 0, deliveredWithoutAcceptance: 0, unknown: 0 });
  });

  it("limits one client to its share: 429 with Sentry's headers, and a limited envelope is never forwarded", async () => {
    const items = Array.from({ length: 150 }, () => envelope(500));
    const sent = await sendAll(
      items.map(({ id, body }) => async () => {
        const response = await post(body, { "cf-connecting-ip": "203.0.113.77" });
        if (response.status === 429) {
          expect(response.headers.get("retry-after")).toBe("10");
          expect(response.headers.get("x-sentry-rate-limits")).toBe("10::key");
        }
        await response.arrayBuffer();
        return { id, bytes: body, status: response.status };
      }),
      24,
    );
    const figures = ledger(sent, ingest);
    console.log(`one client: ${JSON.stringify(figures)}`);
    // 150 envelopes in well under 10 s touch at most two of the limiter's windows of 60.
    expect(figures.accepted).toBeGreaterThanOrEqual(60);
    expect(figures.accepted).toBeLessThanOrEqual(120);
    expect(sent.filter((item) => item.status === 429)).toHaveLength(150 - figures.accepted);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, deliveredWithoutAcceptance: 0, unknown: 0 });

    const other = await post(envelope(500).body, { "cf-connecting-ip": "203.0.113.78" });
    expect(other.status).toBe(200);
  });

  it("counts refused requests against the client's limit too", async () => {
    // Nothing but requests the tunnel refuses (405): they alone bring the client to its limit.
    const statuses: number[] = [];
    while (statuses.length < 200 && statuses.at(-1) !== 429) {
      const response = await worker.fetch(TUNNEL, { headers: { "cf-connecting-ip": "203.0.113.99" } });
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.length).toBeGreaterThan(60);
    expect(new Set(statuses.slice(0, 60))).toEqual(new Set([405]));
  });

  it("answers 408 to a client whose body stalls, and delivers nothing of it", async () => {
    for (const size of [2_000, 300_000]) {
      const { body } = envelope(size);
      const status = await new Promise<number>((resolve, reject) => {
        const request = httpRequest(new URL(TUNNEL, worker.origin), { method: "POST", headers: { "content-length": String(body.length) }, agent: false });
        request.on("response", (response) => {
          resolve(response.statusCode ?? 0);
          request.destroy();
        });
        request.on("error", reject);
        request.write(body.subarray(0, Math.floor(body.length / 2)));
      });
      expect(status, `${size} bytes`).toBe(408);
    }
    await ingest.settled();
    expect(ingest.deliveries).toHaveLength(0);
  });

  it("answers 504 when Sentry's answer stalls mid-body", async () => {
    ingest.respondWith((_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      response.write('{"id":');
    });
    const response = await post(envelope(100).body, {});
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ reason: "upstream_timeout" });
  });
});

describe("fuzzing the tunnel through workerd", () => {
  let ingest: FakeIngest;
  let worker: RunningWorker;
  beforeAll(async () => {
    ingest = await FakeIngest.start();
    worker = await startWorker(
      { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin },
      { rateLimit: { limit: 1_000_000, period: 10 } },
    );
  });
  afterAll(async () => {
    await worker?.dispose();
    await ingest?.stop();
  });

  const valid = buildEnvelope().body;

  const bodies = fc.oneof(
    fc.uint8Array({ maxLength: 2_000 }).map((bytes) => Buffer.from(bytes)),
    fc.nat(valid.length).map((end) => valid.subarray(0, end)),
    fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })).map(([at, byte]) => {
      const mutated = Buffer.from(valid);
      mutated[at] = byte;
      return mutated;
    }),
    fc.jsonValue().map((header) => Buffer.from(`${JSON.stringify(header)}\n{}\n`)),
  );
  const queries = fc.oneof(
    fc.constant(TUNNEL.slice("/monitoring".length)),
    fc.dictionary(fc.constantFrom("o", "p", "r", "x", "url", "o[]"), fc.string({ maxLength: 40 })).map((pairs) => `?${new URLSearchParams(pairs)}`),
    fc.string({ maxLength: 3_000 }).map((text) => `?${encodeURIComponent(text)}`),
    fc.constant(`?o=4501&p=${"9".repeat(4_000)}`),
  );
  const headers = fc.record(
    {
      "content-encoding": fc.constantFrom("gzip", "deflate", "br", "identity", "gzip, gzip", "x-gzip", "", "GZIP"),
      origin: fc.constantFrom("https://evil.example", "null", "http://localhost:8787"),
      "content-type": fc.constantFrom("text/plain;charset=UTF-8", "application/json", "multipart/form-data; boundary=x"),
    },
    { requiredKeys: [] },
  );

  it("answers bad input with a 4xx, never a 5xx, never calls Sentry for it, and never crashes", async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(bodies, queries, headers, fc.constantFrom("POST", "PUT", "GET"), async (body, query, sentHeaders, method) => {
        runs += 1;
        const before = ingest.arrivals;
        const response = await worker.fetch(`/monitoring${query}`, {
          method,
          headers: sentHeaders,
          ...(method === "GET" ? {} : { body: new Uint8Array(body) }),
        });
        const text = await response.text();
        expect(response.status).toBeLessThan(500);
        if (response.status >= 400) {
          expect(JSON.parse(text)).toMatchObject({ reason: expect.any(String), error: expect.any(String) });
          expect(ingest.arrivals).toBe(before);
        } else {
          // Only a well-formed envelope for an allowed DSN gets this far, and it arrives whole, as sent.
          const sent = Buffer.from(body);
          await eventually(() => ingest.deliveries.some((delivery) => delivery.body.equals(sent)));
        }
      }),
      { numRuns: 400 },
    );
    console.log(`fuzz runs: ${runs}`);
    expect(worker.logs.join("\n")).not.toMatch(/Uncaught|internal_error/);
  });
});

describe("a bug in the tunnel itself", () => {
  it("answers 500 and is reported by the Worker's own SDK, straight to Sentry, not through the tunnel", async () => {
    const ingest = await FakeIngest.start();
    const script = await bundleFixture("test/worker/fixtures/broken-tunnel.ts");
    const miniflare = new Miniflare({
      modules: [{ type: "ESModule", path: script }],
      ...wranglerCompatibility(),
      bindings: { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin },
    });
    try {
      const { origin } = await miniflare.ready;
      const response = await fetchOnce(new URL(TUNNEL, origin), {
        method: "POST",
        body: new Uint8Array(envelope(100).body),
        headers: { authorization: "Basic dHVubmVsLXVzZXI6dHVubmVsLXBhc3N3b3Jk", "x-api-key": "tunnel-api-key-value", cookie: "sid=tunnel-cookie-value" },
      });
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({ reason: "internal_error" });
      await eventually(() => ingest.deliveries.length === 1, 10_000);
      await ingest.settled();
      expect(ingest.deliveries).toHaveLength(1);
      const [report] = ingest.deliveries;
      expect(report!.url).toBe("/api/4502/envelope/?hsts=0");
      expect(report!.headers["x-sentry-forwarded-for"]).toBeUndefined();
      expect(report!.body.toString("utf8")).toContain("Planted bug: the allow-list lookup failed");
      for (const secret of ["dHVubmVsLXVzZXI6dHVubmVsLXBhc3N3b3Jk", "tunnel-api-key-value", "tunnel-cookie-value"]) {
        expect(report!.body.toString("utf8")).not.toContain(secret);
      }
    } finally {
      await miniflare.dispose();
      await ingest.stop();
    }
  });
});
