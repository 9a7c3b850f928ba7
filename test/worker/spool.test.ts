import { gunzipSync, gzipSync } from "node:zlib";

import { afterEach, beforeAll, describe, expect, it } from "vitest";

import type { SpooledEnvelope } from "@edge-monitoring/tunnel/testing";
import { buildEnvelope, parseEnvelope } from "../support/envelopes";
import { eventually } from "../support/eventually";
import { answerOk, FakeIngest, type IngestBehaviour } from "../support/fake-ingest";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_TUNNEL, APP_DSN } from "../support/worker";

const OTHER_DSN = "https://fedcba9876543210fedcba9876543210@o4501.ingest.us.sentry.io/4503";
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

/** The body as Sentry should read it: decompressed, with `sent_at` (the one field the spool may move) set aside. */
function content(body: Buffer, gzip: boolean): { header: Record<string, unknown>; rest: Buffer } {
  const plain = gzip ? gunzipSync(body) : body;
  const newline = plain.indexOf(0x0a);
  const { sent_at: _sentAt, ...header } = JSON.parse(plain.subarray(0, newline).toString("utf8")) as Record<string, unknown>;
  return { header, rest: plain.subarray(newline) };
}

/** An ingest whose answers a test switches; it records every envelope it accepted with a 2xx. */
class SwitchableIngest {
  readonly accepted: { id: string; body: Buffer; gzip: boolean }[] = [];
  readonly ingest: FakeIngest;

  constructor(ingest: FakeIngest) {
    this.ingest = ingest;
  }

  set(behaviour: "up" | "503" | "silent" | IngestBehaviour): void {
    this.ingest.respondWith((request, response, body) => {
      if (behaviour === "up") {
        // Answered first, read after: a slow answer here would be Sentry's, and the tunnel would
        // rightly send the envelope again.
        answerOk(request, response, body);
        const gzip = request.headers["content-encoding"] === "gzip";
        const id = (parseEnvelope(gzip ? gunzipSync(body) : body).header.event_id ?? "") as string;
        this.accepted.push({ id, body, gzip });
      } else if (behaviour === "503") {
        response.writeHead(503, { "content-type": "text/plain" });
        response.end("busy");
      } else if (behaviour === "silent") {
        // No answer: the tunnel's deadline runs out.
      } else {
        behaviour(request, response, body);
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

/** The `discarded_events` of each client report the ingest received. */
function clientReports(ingest: FakeIngest): unknown[] {
  return ingest.deliveries.flatMap((delivery) =>
    parseEnvelope(delivery.body)
      .items.filter((item) => item.header.type === "client_report")
      .map((item) => (JSON.parse(item.payload.toString("utf8")) as { discarded_events: unknown }).discarded_events),
  );
}

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
    const envelopes = Array.from({ length: 240 }, (_, index) => built(sizes[index % 4]!, index % 5 === 0));
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
    // The first half meets 503s, the second half an ingest that does not answer at all.
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < envelopes.length) {
          const envelope = envelopes[next++]!;
          if (next === 120) upstream.set("silent");
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
      const sent = content(envelope.sent, envelope.gzip);
      const arrived = content(delivery.body, delivery.gzip);
      return JSON.stringify(sent.header) !== JSON.stringify(arrived.header) || !sent.rest.equals(arrived.rest);
    });
    const lines = worker.logLines("tunnel");
    const { TUNNEL_SPOOL_BUCKET: bucket } = (await worker.bindings()) as { TUNNEL_SPOOL_BUCKET: R2Bucket };
    // Delivered envelopes' R2 objects are deleted just after Sentry's 2xx.
    await eventually(async () => (await bucket.list()).objects.length === 0, 10_000);
    const figures = {
      sent: envelopes.length,
      spooled: lines.filter((line) => line.outcome === "spooled").length,
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
    // The home page's Monitoring panel tells the same story.
    const html = await (await worker.fetch("/")).text();
    expect(html).toContain(`0 waiting, ${figures.spooled} delivered, 0 dropped, of ${figures.spooled} stored by this instance`);
    // Only streamed bodies (over 64 KiB) can fail before the breaker opens: those already in
    // flight, at most one per connection, when the third failure opened it.
    expect(figures.refusedSizes.every((size) => size > 64 * 1024)).toBe(true);
    expect(figures.refused).toBeLessThanOrEqual(16);
  }, 150_000);
});

describe("the spool keeps what Sentry refused out of it", () => {
  const { ingest, worker } = useIngestAndWorker({ TUNNEL_ALLOWED_DSNS: OTHER_DSN, ...FAST_RETRIES }, { rateLimit: { limit: 1_000_000, period: 10 } });
  afterEach(() => ingest.reset());

  it.each([413, 400, 403])("passes Sentry's %i on and stores nothing", async (status) => {
    ingest.respondWith((_request, response) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end("{}");
    });
    const envelope = built(100, false);
    const response = await worker.post(envelope.sent);
    expect(response.status).toBe(status);
    const line = worker.logLines("tunnel").at(-1)!;
    expect(line).toMatchObject({ outcome: "forwarded", upstream_status: status });
    await ingest.settled();
    expect(ingest.deliveries).toHaveLength(1);
  });

  it("stores and delivers an envelope whose DSN carries a legacy secret, as the allowed DSN it is", async () => {
    let calls = 0;
    ingest.respondWith((request, response, body) => {
      calls += 1;
      if (calls > 1) return answerOk(request, response, body);
      response.writeHead(503);
      response.end();
    });
    const legacy = APP_DSN.replace("@", ":legacysecret@");
    const sent = Buffer.from(`${JSON.stringify({ dsn: legacy, event_id: "a".repeat(32) })}\n{"type":"event"}\n{}\n`);
    expect((await worker.post(sent)).status).toBe(202);
    await eventually(() => worker.logLines("tunnel_spool").some((line) => line.outcome !== "retried"), 10_000, { pollMs: 50 });
    expect(worker.logLines("tunnel_spool").at(-1)).toMatchObject({ outcome: "delivered" });
    expect(ingest.deliveries.at(-1)!.body.toString("utf8")).toContain(`"dsn":${JSON.stringify(legacy)}`);
  });

  it("gives Sentry the client's address and identity on a spooled envelope, as on the live forward", async () => {
    const client = {
      "cf-connecting-ip": "203.0.113.77",
      "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chromium/156",
      referer: "https://app.example/checkout",
      "sec-ch-ua-platform": '"Linux"',
      cookie: "session=secret",
    };
    let calls = 0;
    ingest.respondWith((request, response, body) => {
      calls += 1;
      // The second envelope meets an outage once, and is spooled.
      if (calls !== 2) return answerOk(request, response, body);
      response.writeHead(503);
      response.end();
    });
    const [live, spooled] = [built(100, false), built(100, false)];
    expect((await worker.post(live.sent, client)).status).toBe(200);
    expect((await worker.post(spooled.sent, client)).status).toBe(202);
    await eventually(() => worker.logLines("tunnel_spool").some((line) => line.outcome === "delivered"), 10_000, { pollMs: 50 });
    // The last delivery of each: the spooled one's first try met the outage, and its sent_at has moved since.
    const headersOf = ({ id }: Built) => {
      const { host: _host, ...headers } = ingest.deliveries.findLast((delivery) => parseEnvelope(delivery.body).header.event_id === id)!.headers;
      return headers;
    };
    // Relay takes the client's IP from the first of CF-Connecting-IP (Cloudflare's own, on the live
    // forward only), X-Vercel-Forwarded-For, X-Sentry-Forwarded-For and X-Forwarded-For.
    expect(headersOf(live)).toMatchObject({ "x-sentry-forwarded-for": "203.0.113.77", "x-forwarded-for": "203.0.113.77", "user-agent": client["user-agent"] });
    expect(headersOf(spooled)).toEqual(headersOf(live));
    expect(headersOf(spooled)).not.toHaveProperty("cookie");
  });

  it("holds Sentry's rate limit at the edge: that category waits, others and other DSNs pass, until it expires", async () => {
    let calls = 0;
    ingest.respondWith((request, response, body) => {
      calls += 1;
      if (calls === 1) {
        response.writeHead(429, { "retry-after": "2", "x-sentry-rate-limits": "2:error:key" });
        response.end();
      } else {
        answerOk(request, response, body);
      }
    });
    const error = (dsn = APP_DSN) => Buffer.from(`${JSON.stringify({ dsn })}\n{"type":"event"}\n{}\n`);
    const transaction = Buffer.from(`${JSON.stringify({ dsn: APP_DSN })}\n{"type":"transaction"}\n{}\n`);

    expect((await worker.post(error())).status).toBe(429);
    const held = [];
    for (let sent = 0; sent < 10; sent += 1) held.push(await worker.post(error()));
    expect(held.map((response) => response.status)).toEqual(Array(10).fill(429));
    expect(held[0]!.headers.get("x-sentry-rate-limits")).toMatch(/^[12]:error:key$/);
    expect(Number(held[0]!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await held[0]!.json()).toMatchObject({ reason: "sentry_rate_limited" });
    expect(calls).toBe(1);
    console.log(`edge rate limit: ${held.length} upstream calls saved`);
    // Sentry hears of what the edge held back, in one client report, as the SDK would tell it.
    await eventually(() => clientReports(ingest).length === 1, 5_000);
    expect(clientReports(ingest)).toEqual([[{ reason: "ratelimit_backoff", category: "error", quantity: 10 }]]);

    const reportsSoFar = calls;
    expect((await worker.post(transaction)).status).toBe(200);
    expect((await worker.fetch("/monitoring?o=4501&p=4503&r=us", { method: "POST", body: new Uint8Array(error(OTHER_DSN)) })).status).toBe(200);
    expect(calls).toBe(reportsSoFar + 2);

    // The limit said 2 s: after it, errors go to Sentry again.
    await eventually(
      async () => {
        const response = await worker.post(error());
        await response.arrayBuffer();
        return response.status === 200;
      },
      5_000,
      { pollMs: 100 },
    );
    expect(calls).toBe(reportsSoFar + 3);
  });
});

describe("the spool's consumer", () => {
  const { ingest, worker } = useIngestAndWorker({ ...FAST_RETRIES });
  afterEach(() => ingest.reset());

  async function enqueue(envelope: Omit<SpooledEnvelope, "url" | "dsn" | "headers"> & { headers?: Record<string, string> }) {
    const { TUNNEL_SPOOL } = (await worker.bindings()) as { TUNNEL_SPOOL: Queue<SpooledEnvelope> };
    await TUNNEL_SPOOL.send({
      url: `${ingest.origin}/api/4502/envelope/?hsts=0`,
      dsn: APP_DSN,
      headers: { "content-type": "application/x-sentry-envelope", ...envelope.headers },
      ...envelope,
    }, { contentType: "v8" });
  }

  it("delivers an envelope stored an hour ago with its sent_at moved by the wait, and its events untouched", async () => {
    const hourAgo = new Date(Date.now() - 61 * 60 * 1000);
    const envelope = built(50, false, hourAgo);
    await enqueue({ receivedAt: hourAgo.getTime(), body: new Uint8Array(envelope.sent) });
    await eventually(() => ingest.deliveries.length === 1, 10_000);
    const [delivery] = ingest.deliveries;
    const sentAt = Date.parse(parseEnvelope(delivery!.body).header.sent_at as string);
    // Relay would see no drift past its 55 minutes: sent_at is about the time of delivery.
    expect(Math.abs(Date.now() - sentAt)).toBeLessThan(60_000);
    const sent = content(envelope.sent, false);
    const arrived = content(delivery!.body, false);
    expect(arrived.header).toEqual(sent.header);
    expect(arrived.rest.equals(sent.rest)).toBe(true);
  });

  it("sends a sent_at it cannot move as it was, rather than retrying it for ever", async () => {
    const odd = Buffer.from(`${JSON.stringify({ dsn: APP_DSN, event_id: "b".repeat(32), sent_at: "+275760-09-13T00:00:00.000Z" })}\n{"type":"event"}\n{}\n`);
    await enqueue({ receivedAt: Date.now() - 60_000, body: new Uint8Array(odd) });
    await eventually(() => ingest.deliveries.length === 1, 10_000);
    expect(ingest.deliveries[0]!.body.equals(odd)).toBe(true);
  });

  it("keeps a gzip body compressed: a 19 MiB bomb of 19 KiB goes out at its own size, its sent_at moved", async () => {
    const hourAgo = new Date(Date.now() - 61 * 60 * 1000);
    const plain = Buffer.concat([Buffer.from(`${JSON.stringify({ dsn: APP_DSN, event_id: "c".repeat(32), sent_at: hourAgo.toISOString() })}\n{"type":"attachment","length":${19 * 1024 * 1024}}\n`), Buffer.alloc(19 * 1024 * 1024)]);
    const bomb = gzipSync(plain);
    await enqueue({ receivedAt: hourAgo.getTime(), body: new Uint8Array(bomb), headers: { "content-encoding": "gzip" } });
    await eventually(() => ingest.deliveries.length === 1, 10_000);
    const [delivery] = ingest.deliveries;
    expect(delivery!.headers["content-encoding"]).toBe("gzip");
    expect(delivery!.body.length).toBeLessThanOrEqual(bomb.length + 32);
    const sentAt = Date.parse(parseEnvelope(gunzipSync(delivery!.body)).header.sent_at as string);
    expect(Math.abs(Date.now() - sentAt)).toBeLessThan(60_000);
  });

  it("drops an envelope older than 24 hours, with a log line, and never sends it", async () => {
    const old = Date.now() - 25 * 60 * 60 * 1000;
    await enqueue({ receivedAt: old, body: new Uint8Array(built(50, false, new Date(old)).sent) });
    await eventually(() => worker.logLines("tunnel_spool").some((line) => line.outcome === "expired"), 10_000);
    // What reaches Sentry is only the edge's word that it gave one error up.
    await eventually(() => clientReports(ingest).length === 1, 5_000);
    expect(clientReports(ingest)).toEqual([[{ reason: "network_error", category: "attachment", quantity: 1 }]]);
    expect(ingest.arrivals).toBe(1);
  });

  it("drops an envelope that Sentry answers with a redirect, which is never followed", async () => {
    ingest.respondWith((_request, response) => {
      response.writeHead(307, { location: `${ingest.origin}/elsewhere` });
      response.end();
    });
    const seen = worker.logLines("tunnel_spool").length;
    await enqueue({ receivedAt: Date.now(), body: new Uint8Array(built(50, false).sent) });
    await eventually(() => worker.logLines("tunnel_spool").length > seen, 10_000);
    expect(worker.logLines("tunnel_spool").slice(seen)).toEqual([expect.objectContaining({ outcome: "dropped" })]);
    expect(ingest.deliveries.map((delivery) => delivery.url)).toEqual(["/api/4502/envelope/?hsts=0"]);
  });

  it("drops an envelope that Sentry refuses with a 4xx, and retries one it answers 503", async () => {
    let answers = [400, 503, 200];
    ingest.respondWith((request, response, body) => {
      const status = answers.shift() ?? 200;
      if (status === 200) return answerOk(request, response, body);
      response.writeHead(status);
      response.end();
    });
    const linesSince = (count: number) => worker.logLines("tunnel_spool").slice(count);
    let seen = worker.logLines("tunnel_spool").length;
    await enqueue({ receivedAt: Date.now(), body: new Uint8Array(built(50, false).sent) });
    await eventually(() => linesSince(seen).some((line) => line.outcome === "dropped"), 10_000);
    expect(linesSince(seen)).toEqual([expect.objectContaining({ outcome: "dropped", upstream_status: 400 })]);

    answers = [503, 200];
    seen = worker.logLines("tunnel_spool").length;
    await enqueue({ receivedAt: Date.now(), body: new Uint8Array(built(50, false).sent) });
    await eventually(() => linesSince(seen).some((line) => line.outcome === "delivered"), 20_000);
    expect(linesSince(seen).map(({ outcome, upstream_status }) => [outcome, upstream_status])).toEqual([
      ["retried", 503],
      ["delivered", 200],
    ]);
    expect(ingest.deliveries).toHaveLength(3);
  });
});

describe("the spool's bounds", () => {
  // Three 256 KiB units per client per minute, so that the test reaches the budget quickly.
  const { ingest, worker } = useIngestAndWorker(
    { TUNNEL_TIMEOUT_MS: "1500", ...FAST_RETRIES },
    { rateLimit: { limit: 1_000_000, period: 10 }, rateLimits: { TUNNEL_SPOOL_CLIENT_BUDGET: { limit: 3, period: 60 } } },
  );
  afterEach(() => ingest.reset());

  const send = (envelope: Built, ip: string) =>
    worker.fetch(APP_TUNNEL, { method: "POST", body: new Uint8Array(envelope.sent), headers: { "cf-connecting-ip": ip } });

  it("stores at most a client's byte budget, answers 503 with Retry-After past it, stores other clients' still, and tells Sentry", async () => {
    const upstream = new SwitchableIngest(ingest);
    upstream.set("503");
    const statuses: number[] = [];
    for (let sent = 0; sent < 24; sent += 1) {
      const response = await send(built(60_000, false), "203.0.113.60");
      statuses.push(response.status);
      if (response.status === 503) {
        expect(response.headers.get("retry-after")).toBe("60");
        expect(await response.json()).toMatchObject({ reason: "spool_full" });
      } else {
        await response.arrayBuffer();
      }
    }
    const stored = statuses.filter((status) => status === 202).length;
    const refused = statuses.filter((status) => status === 503).length;
    // Stored until the budget ran out (3 units of 256 KiB, and what is carried short of a unit), then refused.
    expect(statuses).toEqual([...Array<number>(stored).fill(202), ...Array<number>(refused).fill(503)]);
    expect(stored * 60_000).toBeLessThanOrEqual(4 * 256 * 1024);
    expect(refused).toBeGreaterThan(0);
    expect((await send(built(60_000, false), "203.0.113.61")).status).toBe(202);

    upstream.set("up");
    await eventually(() => upstream.accepted.length >= stored + 1 && clientReports(ingest).length === 1, 20_000);
    expect(clientReports(ingest)).toEqual([[{ reason: "queue_overflow", category: "attachment", quantity: refused }]]);
  });
});

describe("the breaker, fair to Sentry and to clients", () => {
  const { ingest, worker } = useIngestAndWorker({ TUNNEL_TIMEOUT_MS: "1500", ...FAST_RETRIES }, { rateLimit: { limit: 1_000_000, period: 10 } });

  it("lets no slow client open the breaker: a body whose last byte comes just before the deadline is answered live, once", async () => {
    // Sentry takes 300 ms: an envelope whose body ends 100 ms before the deadline needs its share after it.
    ingest.respondWith((request, response, body) => setTimeout(() => answerOk(request, response, body), 300));
    const trickled = async () => {
      const envelope = built(100, false);
      let push!: (chunk: Uint8Array<ArrayBuffer> | null) => void;
      const body = new ReadableStream<Uint8Array<ArrayBuffer>>({
        start(controller) {
          push = (chunk) => (chunk ? controller.enqueue(chunk) : controller.close());
        },
      });
      const answer = worker.fetch(APP_TUNNEL, { method: "POST", body, headers: { "content-length": String(envelope.sent.length) } });
      push(new Uint8Array(envelope.sent.subarray(0, 50)));
      await new Promise((resolve) => setTimeout(resolve, 1_400));
      push(new Uint8Array(envelope.sent.subarray(50)));
      push(null);
      return { envelope, response: await answer };
    };
    const results = await Promise.all([trickled(), trickled(), trickled(), trickled()]);
    expect(results.map(({ response }) => response.status)).toEqual([200, 200, 200, 200]);
    // The breaker stayed closed: a quick client's envelope goes to Sentry, not to the spool.
    const quick = await worker.fetch(APP_TUNNEL, { method: "POST", body: new Uint8Array(built(100, false).sent) });
    expect(quick.status).toBe(200);
    await ingest.settled();
    const ids = ingest.deliveries.map((delivery) => parseEnvelope(delivery.body).header.event_id);
    for (const { envelope } of results) expect(ids.filter((id) => id === envelope.id)).toHaveLength(1);
    expect(worker.logLines("tunnel_spool").filter((line) => line.outcome === "delivered")).toHaveLength(0);
  });
});
