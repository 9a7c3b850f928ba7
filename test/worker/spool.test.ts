import { gunzipSync, gzipSync } from "node:zlib";

import { eventually } from "@edge-monitoring/tunnel/testing";
import { beforeAll, describe, expect, it } from "vitest";

import { besidesSentAt, buildEnvelope, parseEnvelope } from "../support/envelopes";
import { answerOk, type FakeIngest } from "../support/fake-ingest";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_TUNNEL } from "../support/worker";

const MiB = 1024 * 1024;
const UNLIMITED_BUDGETS = { TUNNEL_SPOOL_CLIENT_BUDGET: { limit: 1_000_000, period: 60 }, TUNNEL_SPOOL_TOTAL_BUDGET: { limit: 1_000_000, period: 60 } };
/** Retries start at 1 s here (10 s in wrangler.toml), so that an outage's backlog drains within a test. */
const FAST_RETRIES = { TUNNEL_SPOOL_RETRY_SECONDS: "1" };

interface Built {
  id: string;
  /** What the client sends. */
  sent: Buffer;
  gzip: boolean;
}

/** A distinct envelope with a `sent_at` and an attachment of `size` random bytes, gzipped if asked. */
function built(size: number, gzip: boolean, sentAt = new Date()): Built {
  const { id, body } = buildEnvelope({ sentAt, attachmentBytes: size });
  return { id, sent: gzip ? gzipSync(body) : body, gzip };
}

/** An ingest whose answers a test switches; it records every envelope it accepted with a 2xx. */
class SwitchableIngest {
  readonly accepted: { id: string; body: Buffer; gzip: boolean }[] = [];
  readonly ingest: FakeIngest;

  constructor(ingest: FakeIngest) {
    this.ingest = ingest;
  }

  set(behaviour: "up" | "503"): void {
    this.ingest.respondWith((request, response, body) => {
      if (behaviour === "up") {
        // Answered first, read after: a slow answer here would be Sentry's, and the tunnel would
        // rightly send the envelope again.
        answerOk(request, response, body);
        const gzip = request.headers["content-encoding"] === "gzip";
        const id = (parseEnvelope(gzip ? gunzipSync(body) : body).header.event_id ?? "") as string;
        this.accepted.push({ id, body, gzip });
      } else {
        response.writeHead(503, { "content-type": "text/plain" });
        response.end("busy");
      }
    });
  }

  /** Envelope id → how many times it was accepted. */
  counts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { id } of this.accepted) counts.set(id, (counts.get(id) ?? 0) + 1);
    return counts;
  }
}

/**
 * The spool as this app's Worker wires it: the queue and its consumer, R2 and the budgets as
 * `wrangler.toml` binds them, run by Miniflare, and the home page's Monitoring panel. The spool's
 * own cases (the consumer's verdicts, the budgets, the breaker, Sentry's refusals and limits) are
 * the package's, in workerd (`packages/tunnel/test/spool.workerd.test.ts`).
 */
describe("the spool: nothing the tunnel accepted is lost while Sentry is down", () => {
  const { ingest, worker } = useIngestAndWorker(
    // Outside production, where the Monitoring panel shows the spool's counts. The deadline is
    // generous (Sentry's share 5 s): an answer that comes after it is rightly taken for none and the
    // envelope sent again, and with both cores busy, the loopback ingest's prompt 200s came later
    // than the 0.75 s share of a 1.5 s deadline (8 sent twice, workerd 1.20261102).
    { SENTRY_ENVIRONMENT: "staging", TUNNEL_TIMEOUT_MS: "10000", ...FAST_RETRIES },
    // One client stores far more than its byte budget here; the budget has a test of its own.
    { rateLimit: { limit: 1_000_000, period: 10 }, rateLimits: UNLIMITED_BUDGETS },
  );
  let upstream: SwitchableIngest;
  beforeAll(() => {
    upstream = new SwitchableIngest(ingest);
  });

  it("keeps a ledger: every envelope answered 2xx during an outage arrives once, byte for byte but for sent_at", async () => {
    const sizes = [200, 9_000, 70_000, 1 * MiB];
    const envelopes = Array.from({ length: 40 }, (_, index) => built(sizes[index % 4]!, index % 5 === 0));
    upstream.set("503");
    const statuses = new Map<string, number>();
    let next = 0;
    const sendOne = async (envelope: Built) => {
      const response = await worker.fetch(APP_TUNNEL, {
        method: "POST",
        body: new Uint8Array(envelope.sent),
        headers: envelope.gzip ? { "content-encoding": "gzip" } : {},
      });
      statuses.set(envelope.id, response.status);
      await response.arrayBuffer();
    };
    // Sentry answers 503 (the package's ledger has one that does not answer at all, too).
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < envelopes.length) {
          const envelope = envelopes[next++]!;
          await sendOne(envelope);
        }
      }),
    );
    upstream.set("up");

    const accepted = envelopes.filter((envelope) => (statuses.get(envelope.id) ?? 0) < 300);
    // Envelopes tried during the outage wait out their backoff (from 1 s here, doubling, with jitter).
    await eventually(() => accepted.every((envelope) => upstream.counts().has(envelope.id)), 120_000, { pollMs: 200 });
    const counts = upstream.counts();
    const byId = new Map(upstream.accepted.map((delivery) => [delivery.id, delivery]));
    const changed = accepted.filter((envelope) => {
      const delivery = byId.get(envelope.id)!;
      const sent = besidesSentAt(envelope.sent, envelope.gzip);
      const arrived = besidesSentAt(delivery.body, delivery.gzip);
      return JSON.stringify(sent.header) !== JSON.stringify(arrived.header) || !sent.rest.equals(arrived.rest);
    });
    const { TUNNEL_SPOOL_BUCKET: bucket } = (await worker.bindings()) as { TUNNEL_SPOOL_BUCKET: R2Bucket };
    // Delivered envelopes' R2 objects are deleted just after Sentry's 2xx.
    await eventually(async () => (await bucket.list()).objects.length === 0, 10_000);
    const figures = {
      sent: envelopes.length,
      spooled: [...statuses.values()].filter((status) => status === 202).length,
      accepted: accepted.length,
      refused: envelopes.length - accepted.length,
      refusedSizes: envelopes.filter((envelope) => !accepted.includes(envelope)).map((envelope) => envelope.sent.length),
      lost: accepted.filter((envelope) => !counts.has(envelope.id)).length,
      duplicated: [...counts.values()].filter((count) => count > 1).length,
      changed: changed.length,
      // The spool's rule: a body that fits in a 128 KB message goes in it, any other to R2.
      inMessages: accepted.filter((envelope) => envelope.sent.length < 120_000).length,
      inR2: accepted.filter((envelope) => envelope.sent.length >= 120_000).length,
      r2ObjectsLeft: (await bucket.list()).objects.length,
    };
    console.log(`spool ledger: ${JSON.stringify(figures)}`);
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, changed: 0, r2ObjectsLeft: 0 });
    // Only streamed bodies (over 64 KiB) can fail before the breaker opens: those already in
    // flight, at most one per connection, when the third failure opened it.
    expect(figures.refusedSizes.every((size) => size > 64 * 1024)).toBe(true);
    expect(figures.refused).toBeLessThanOrEqual(8);
  }, 150_000);
});
