import { gunzipSync, gzipSync } from "node:zlib";

import { beforeEach, describe, expect, it } from "vitest";

import { buildEnvelope, parseEnvelope } from "../support/envelopes";
import type { FakeIngest } from "../support/fake-ingest";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_TUNNEL } from "../support/worker";

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

/** Many envelopes at once, and one client over its share: what is refused, and that nothing accepted is lost. */
describe("load and limits, in workerd", () => {
  // wrangler.toml's limit, without the spool: the figures are the live path's.
  const { ingest, worker } = useIngestAndWorker({ TUNNEL_TIMEOUT_MS: "1500" }, { spool: false });
  beforeEach(() => ingest.reset());

  it("loses and duplicates nothing: 600 envelopes, 32 at a time, from 120 clients", async () => {
    const items = Array.from({ length: 600 }, (_, index) => ({ ...envelope([200, 9_000, 70_000][index % 3]!), ip: `198.51.100.${index % 120}` }));
    const sent = await sendAll(
      items.map(({ id, body, ip }, index) => async () => {
        const compressed = index % 5 === 0;
        const bytes = compressed ? gzipSync(body) : body;
        const response = await worker.post(bytes, { "cf-connecting-ip": ip, ...(compressed ? { "content-encoding": "gzip" } : {}) });
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
        const response = await worker.post(body, { "cf-connecting-ip": "203.0.113.77" });
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

    const other = await worker.post(envelope(500).body, { "cf-connecting-ip": "203.0.113.78" });
    expect(other.status).toBe(200);
  });

  it("counts refused requests against the client's limit too", async () => {
    // Nothing but requests the tunnel refuses (405): they alone bring the client to its limit.
    const statuses: number[] = [];
    while (statuses.length < 200 && statuses.at(-1) !== 429) {
      const response = await worker.fetch(APP_TUNNEL, { headers: { "cf-connecting-ip": "203.0.113.99" } });
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.length).toBeGreaterThan(60);
    expect(new Set(statuses.slice(0, 60))).toEqual(new Set([405]));
  });
});
