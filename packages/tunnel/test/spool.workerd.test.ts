import { gunzipSync, gzipSync } from "node:zlib";

import { createExecutionContext, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

import type { LogLine } from "../src/index.ts";
import { spool, spoolFromEnv, type SpooledEnvelope, type SpoolOptions } from "../src/spool.ts";
import { createTunnel, optionsFromEnv } from "../src/index.ts";
import {
  TEST_DSN,
  batchOf,
  configRefusal,
  concat,
  envelope,
  equalBytes,
  eventually,
  EVERY_CLIENT,
  headerOf,
  neverAnswers,
  OTHER_TEST_DSN,
  SENTRY_OK,
  StubSentry,
  TEST_TUNNEL,
  tunnelUnderTest,
  type Took,
  type TunnelUnderTest,
} from "./support/test-harness.ts";

/**
 * The spool where it runs: in workerd (Cloudflare's vitest integration), the tunnel as
 * `createTunnelWorker` builds it, Miniflare's own R2 and Rate Limiting, and the consumer and the
 * dead-letter handler handed the integration's message batches. Sentry is a stub `fetch`; no
 * socket is opened. The file's tests share one R2 bucket, and each leaves it as empty as it found it.
 */
const bindings = env as unknown as { TUNNEL_SPOOL_BUCKET: R2Bucket; TUNNEL_SPOOL_CLIENT_BUDGET: RateLimit };
const bucket = bindings.TUNNEL_SPOOL_BUCKET;
const MiB = 1024 * 1024;
/** Retries from 1 s (10 s in the README's `wrangler.toml`). */
const FAST_RETRIES = { retrySeconds: 1 };

const busy = () => new Response("busy", { status: 503 });
const spoolObjects = async () => (await bucket.list({ prefix: "spool/" })).objects.map((object) => object.size);

/**
 * A tunnel whose spool keeps `inHandBytes` in hand, under queue names of its own, around `sentry`:
 * what it stores, its lines, and `post`, which answers a body's status and reason.
 */
function smallHand(inHandBytes: number, name: string, sentry: StubSentry) {
  const stored: SpooledEnvelope[] = [];
  const lines: LogLine[] = [];
  const queue = { send: async (message: SpooledEnvelope) => void stored.push(message) };
  const tunnel = createTunnel(
    {
      dsn: TEST_DSN,
      limiter: EVERY_CLIENT,
      spool: spool({ queue, bucket, clientBudget: EVERY_CLIENT, totalBudget: EVERY_CLIENT, inHandBytes, queueName: `${name}-spool`, deadLetterQueueName: `${name}-dead` }),
    },
    { fetch: sentry.fetch, log: (line) => void lines.push(line) },
  );
  const post = async (body: Uint8Array) => {
    const answer = (await tunnel.handle(new Request(`https://app.example${TEST_TUNNEL}`, { method: "POST", body, headers: { "content-length": String(body.byteLength) } })))!;
    return [answer.status, (JSON.parse((await answer.text()) || "{}") as { reason?: string }).reason];
  };
  return { post, stored, lines, clientShare: tunnel.clientShare };
}

async function sha256(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** A body of unknown length, as a client that sends it chunked hands it over. */
const chunked = (body: Uint8Array) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < body.byteLength; at += 16_384) controller.enqueue(body.slice(at, at + 16_384));
      controller.close();
    },
  });

/** The body as Sentry reads it: decompressed, with `sent_at` (the one field the spool may move) set aside. */
function content(body: Uint8Array, gzip: boolean): { header: Record<string, unknown>; rest: Uint8Array } {
  const plain = gzip ? new Uint8Array(gunzipSync(body)) : body;
  const { sent_at: _sentAt, ...header } = headerOf(plain);
  return { header, rest: plain.subarray(plain.indexOf(0x0a)) };
}

const isGzip = (took: Took) => took.headers.get("content-encoding") === "gzip";
const eventIdOf = (took: Took) => headerOf(isGzip(took) ? new Uint8Array(gunzipSync(took.body)) : took.body).event_id as string;

/**
 * Runs the queue as Cloudflare would, each round one real batch of what is waiting, until nothing
 * is: the retried messages wait for the next round (their delay is not waited out here; the
 * breaker's cool-down, on the clock, is), acknowledged ones are gone.
 */
async function drain(tunnel: TunnelUnderTest, timeoutMs = 30_000): Promise<void> {
  let waiting = tunnel.stored.splice(0).map((body) => ({ body, attempts: 1 }));
  const deadline = Date.now() + timeoutMs;
  while (waiting.length > 0) {
    if (Date.now() > deadline) throw new Error(`${waiting.length} messages still waiting after ${timeoutMs} ms`);
    const retried: typeof waiting = [];
    for (let at = 0; at < waiting.length; at += 100) {
      const round = waiting.slice(at, at + 100);
      const batch = batchOf("tunnel-spool", round.map(({ body }) => body));
      await tunnel.tunnel.queue(batch);
      const result = await getQueueResult(batch, createExecutionContext());
      for (const id of result.retryMessages.map((message) => message.msgId)) retried.push({ ...round[Number(id)]!, attempts: round[Number(id)]!.attempts + 1 });
    }
    // Anything the consumer spooled again (a probe that failed) waits with the rest.
    waiting = [...retried, ...tunnel.stored.splice(0).map((body) => ({ body, attempts: 1 }))];
    if (waiting.length > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("the spool: nothing the tunnel accepted is lost while Sentry is down", () => {
  it("keeps a ledger: every envelope answered 2xx during an outage arrives once, byte for byte but for sent_at", { timeout: 60_000 }, async () => {
    const tunnel = tunnelUnderTest({ timeoutMs: 1000, spool: { bucket, ...FAST_RETRIES } });
    const sizes = [200, 9_000, 70_000, 1 * MiB];
    const envelopes = Array.from({ length: 240 }, (_, index) => {
      const { id, body } = envelope({ sentAt: new Date(), attachmentBytes: sizes[index % 4]! });
      const gzip = index % 5 === 0;
      return { id, gzip, sent: gzip ? new Uint8Array(gzipSync(body)) : body };
    });
    tunnel.sentry.answer = busy;
    const statuses = new Map<string, number>();
    let next = 0;
    // The first half meets 503s, the second half a Sentry that does not answer at all.
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < envelopes.length) {
          const sent = envelopes[next++]!;
          if (next === 120) tunnel.sentry.answer = neverAnswers;
          const response = await tunnel.post(sent.sent, sent.gzip ? { "content-encoding": "gzip" } : {});
          statuses.set(sent.id, response.status);
          await response.arrayBuffer();
        }
      }),
    );
    tunnel.sentry.answer = () => Response.json(SENTRY_OK);
    const tookBefore = tunnel.sentry.took.length;
    await drain(tunnel);

    const accepted = envelopes.filter((sent) => statuses.get(sent.id)! < 300);
    const arrived = tunnel.sentry.envelopes().slice(tookBefore);
    const counts = new Map<string, number>();
    for (const took of arrived) counts.set(eventIdOf(took), (counts.get(eventIdOf(took)) ?? 0) + 1);
    const byId = new Map(arrived.map((took) => [eventIdOf(took), took]));
    const changed = accepted.filter((sent) => {
      const took = byId.get(sent.id);
      if (!took) return false;
      const [before, after] = [content(sent.sent, sent.gzip), content(took.body, isGzip(took))];
      return JSON.stringify(before.header) !== JSON.stringify(after.header) || !equalBytes(before.rest, after.rest);
    });
    const figures = {
      sent: envelopes.length,
      // Answered 202: stored. Their lines are fewer: once the breaker is open, one per window says them.
      spooled: [...statuses.values()].filter((status) => status === 202).length,
      accepted: accepted.length,
      refusedSizes: envelopes.filter((sent) => !accepted.includes(sent)).map((sent) => sent.sent.byteLength),
      lost: accepted.filter((sent) => !counts.has(sent.id)).length,
      duplicated: [...counts.values()].filter((count) => count > 1).length,
      changed: changed.length,
      r2ObjectsLeft: (await spoolObjects()).length,
    };
    console.log(`spool ledger: ${JSON.stringify({ ...figures, refusedSizes: figures.refusedSizes.length })}`);
    // The bodies over 64 KiB that were streaming to Sentry when it failed were kept in hand (16 at
    // once at most, some 17 MiB, within the default 32 MiB), and stored: none is refused.
    expect(figures).toMatchObject({ lost: 0, duplicated: 0, changed: 0, r2ObjectsLeft: 0, refusedSizes: [] });
    expect(figures.spooled).toBeGreaterThan(200);
  });

  it("keeps a body of unknown length in hand too, and stores it whether Sentry fails under it or the breaker is open", async () => {
    const tunnel = tunnelUnderTest({ timeoutMs: 2000, spool: { bucket } });
    tunnel.sentry.answer = busy;
    const bodies = Array.from({ length: 4 }, () => envelope({ attachmentBytes: 150_000 }).body);
    for (const body of bodies) expect((await tunnel.post(chunked(body))).status).toBe(202);
    // The fourth came with the breaker open: read whole, it went to the spool without asking Sentry.
    expect(tunnel.sentry.took).toHaveLength(3);
    expect((await spoolObjects()).sort()).toEqual(bodies.map((body) => body.byteLength).sort());
    await Promise.all(tunnel.stored.map((message) => message.key && bucket.delete(message.key)));
  });

  it("without a bucket, stores a body that fits in a message, and answers one that does not with an error, counted, whether its length was declared or not", async () => {
    const tunnel = tunnelUnderTest({ timeoutMs: 2000 });
    tunnel.sentry.answer = busy;
    const [small, large] = [envelope().body, envelope({ attachmentBytes: 200_000 }).body];
    const answers = [await tunnel.post(chunked(small)), await tunnel.post(chunked(large)), await tunnel.post(large)];
    const reasons = await Promise.all(answers.map(async (answer) => [answer.status, ((await answer.json()) as { reason?: string }).reason]));
    expect(reasons).toEqual([[202, "spooled"], [503, "not_kept_in_hand"], [503, "not_kept_in_hand"]]);
    // The small one, in its message (packed, as it pays).
    expect(tunnel.stored.map((message) => message.key === undefined && message.body !== undefined)).toEqual([true]);
    tunnel.sentry.answer = () => Response.json(SENTRY_OK);
    await tunnel.tunnel.clientShare.reports.flush();
    // Both read whole, chunked or not, so their items are counted as what they are.
    expect(tunnel.sentry.clientReports()).toEqual([[{ reason: "buffer_overflow", category: "attachment", quantity: 2 }]]);
  });

  it("past what it keeps in hand, loses a streaming body Sentry fails under with an error, in its line and in a client report", async () => {
    const waiting: (() => void)[] = [];
    const sentry = new StubSentry();
    sentry.answer = () => new Promise<Response>((resolve) => waiting.push(() => resolve(busy())));
    const { post, stored, lines, clientShare } = smallHand(600_000, "in-hand", sentry);
    const bodies = [250_000, 250_000, 250_000, 400_000].map((attachmentBytes) => envelope({ attachmentBytes }).body);
    // Two held at once fill the 600 KB but for 100 KB: a third of 250 KB finds no room, and one
    // over half of it (300 KB) is never held.
    const first = [post(bodies[0]!), post(bodies[1]!)];
    await eventually(() => sentry.took.length === 2);
    const later = [post(bodies[2]!), post(bodies[3]!)];
    await eventually(() => sentry.took.length === 4);
    for (const answer of waiting) answer();
    const reasons = await Promise.all([...first, ...later]);
    expect(reasons).toEqual([[202, "spooled"], [202, "spooled"], [503, "not_kept_in_hand"], [503, "not_kept_in_hand"]]);
    expect(lines.filter((line) => line.event === "tunnel").map((line) => line.event === "tunnel" && line.reason).sort()).toEqual(["not_kept_in_hand", "not_kept_in_hand", "spooled", "spooled"]);
    expect((await spoolObjects()).sort()).toEqual([bodies[0]!.byteLength, bodies[1]!.byteLength]);
    sentry.answer = () => Response.json(SENTRY_OK);
    await clientShare.reports.flush();
    expect(sentry.clientReports()).toEqual([[{ reason: "buffer_overflow", category: "default", quantity: 2 }]]);
    await Promise.all(stored.map((message) => message.key && bucket.delete(message.key)));
  });

  it("gives back the memory a large body held once it is answered: after more than it holds at once, refused or delivered, one Sentry fails under is still stored", async () => {
    const sentry = new StubSentry();
    const { post, stored } = smallHand(600_000, "given-back", sentry);
    // Of 250 KB each, one after another: two at once would leave no room for a third.
    for (let index = 0; index < 3; index += 1) expect(await post(envelope({ dsn: OTHER_TEST_DSN, attachmentBytes: 250_000 }).body)).toEqual([403, "dsn_not_allowed"]);
    for (let index = 0; index < 3; index += 1) expect(await post(envelope({ attachmentBytes: 250_000 }).body)).toEqual([200, undefined]);
    sentry.answer = busy;
    const last = envelope({ attachmentBytes: 250_000 }).body;
    expect(await post(last)).toEqual([202, "spooled"]);
    expect(await spoolObjects()).toEqual([last.byteLength]);
    await Promise.all(stored.map((message) => message.key && bucket.delete(message.key)));
  });

  it("stores a body too large for a message in R2 once the breaker is open, and the consumer delivers each byte for byte from a real batch", async () => {
    const tunnel = tunnelUnderTest({ timeoutMs: 2000, spool: { bucket, ...FAST_RETRIES } });
    tunnel.sentry.answer = busy;
    // Three small ones fail live and are stored as messages; then the breaker is open.
    const small = [envelope().body, envelope().body, envelope().body];
    for (const body of small) expect((await tunnel.post(body)).status).toBe(202);
    const large = envelope({ attachmentBytes: 200_000 }).body;
    expect((await tunnel.post(large)).status).toBe(202);
    expect(await spoolObjects()).toEqual([large.byteLength]);
    // Its line counts the whole envelope stored, not the part read before the spool took it.
    expect(tunnel.lines.filter((line) => line.event === "tunnel").at(-1)).toMatchObject({ outcome: "spooled", bytes: large.byteLength });
    expect(tunnel.stored.map((message) => message.key === undefined)).toEqual([true, true, true, false]);

    tunnel.sentry.answer = () => Response.json(SENTRY_OK);
    const tookBefore = tunnel.sentry.took.length;
    const batch = batchOf("tunnel-spool", tunnel.stored);
    await tunnel.tunnel.queue(batch);
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.explicitAcks.sort()).toEqual(["0", "1", "2", "3"]);
    expect(result.retryMessages).toEqual([]);
    // Each went out as it came, but for the `sent_at` the consumer moves by the wait: none here.
    const took = await Promise.all(tunnel.sentry.took.slice(tookBefore).map((delivery) => sha256(delivery.body)));
    expect(took.sort()).toEqual((await Promise.all([...small, large].map(sha256))).sort());
    expect(await spoolObjects()).toEqual([]);
  });

  it("streams into R2 as it arrives a body it cannot hold, once the breaker is open, without asking Sentry", async () => {
    const sentry = new StubSentry();
    sentry.answer = busy;
    const { post, stored } = smallHand(300_000, "streamed", sentry);
    for (let index = 0; index < 3; index += 1) expect(await post(envelope().body)).toEqual([202, "spooled"]);
    // Over the 150 KB each body may hold of the 300 KB.
    const large = envelope({ attachmentBytes: 200_000 }).body;
    expect(await post(large)).toEqual([202, "spooled"]);
    expect(sentry.took).toHaveLength(3);
    expect(await spoolObjects()).toEqual([large.byteLength]);
    const object = await bucket.get(stored.at(-1)!.key!);
    expect(await sha256(await object!.arrayBuffer())).toBe(await sha256(large));
    await bucket.delete(stored.at(-1)!.key!);
  });

  it("stores nothing and sends Sentry nothing of a streamed body whose client goes away half way, and logs the client's failure", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket } });
    const large = envelope({ attachmentBytes: 200_000 }).body;
    let sent = false;
    const goesAway = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(new TypeError("The client went away"));
        sent = true;
        controller.enqueue(large.subarray(0, 100_000));
      },
    });
    const response = await tunnel.post(goesAway, { "content-length": String(large.byteLength) });
    expect(response.status).toBe(400);
    expect(tunnel.lines).toMatchObject([{ event: "tunnel", reason: "body_incomplete" }]);
    expect(tunnel.stored).toEqual([]);
    expect(await spoolObjects()).toEqual([]);
    expect(tunnel.sentry.took).toEqual([]);
  });
});

describe("the spool keeps what Sentry refused out of it", () => {
  it.each([413, 400, 403])("passes Sentry's %i on and stores nothing", async (status) => {
    const tunnel = tunnelUnderTest({ spool: { bucket } });
    tunnel.sentry.answer = () => Response.json({}, { status });
    const response = await tunnel.post(envelope().body);
    expect(response.status).toBe(status);
    expect(tunnel.lines.at(-1)).toMatchObject({ outcome: "forwarded", upstream_status: status });
    expect(tunnel.sentry.took).toHaveLength(1);
    expect(tunnel.stored).toEqual([]);
  });

  it("stores and delivers an envelope whose DSN carries a legacy secret, as the allowed DSN it is", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket, ...FAST_RETRIES } });
    tunnel.sentry.answer = busy;
    const legacy = TEST_DSN.replace("@", ":legacysecret@");
    const sent = new TextEncoder().encode(`${JSON.stringify({ dsn: legacy, event_id: "a".repeat(32) })}\n{"type":"event"}\n{}\n`);
    expect((await tunnel.post(sent)).status).toBe(202);
    tunnel.sentry.answer = () => Response.json(SENTRY_OK);
    await drain(tunnel);
    // A delivery is counted in its batch's line (and its own data point), like a live 2xx.
    expect(tunnel.lines.filter((line) => line.event === "tunnel_spool_batch").at(-1)).toMatchObject({ delivered: 1 });
    expect(new TextDecoder().decode(tunnel.sentry.took.at(-1)!.body)).toContain(`"dsn":${JSON.stringify(legacy)}`);
  });

  it("gives Sentry the client's address and identity on a spooled envelope, as on the live forward", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket, ...FAST_RETRIES } });
    const client = {
      "cf-connecting-ip": "203.0.113.77",
      "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chromium/156",
      referer: "https://app.example/checkout",
      "sec-ch-ua-platform": '"Linux"',
      cookie: "session=secret",
    };
    const [live, spooled] = [envelope(), envelope()];
    expect((await tunnel.post(live.body, client)).status).toBe(200);
    tunnel.sentry.answer = busy;
    expect((await tunnel.post(spooled.body, client)).status).toBe(202);
    tunnel.sentry.answer = () => Response.json(SENTRY_OK);
    await drain(tunnel);
    const headersOf = ({ id }: { id: string }) => Object.fromEntries(tunnel.sentry.took.findLast((took) => headerOf(took.body).event_id === id)!.headers);
    // Relay takes the client's IP from the first of CF-Connecting-IP (Cloudflare's own, on the live
    // forward only), X-Vercel-Forwarded-For, X-Sentry-Forwarded-For and X-Forwarded-For.
    expect(headersOf(live)).toMatchObject({ "x-sentry-forwarded-for": "203.0.113.77", "x-forwarded-for": "203.0.113.77", "user-agent": client["user-agent"] });
    expect(headersOf(spooled)).toEqual(headersOf(live));
    expect(headersOf(spooled)).not.toHaveProperty("cookie");
  });

  it("holds Sentry's rate limit at the edge: that category waits, others and other DSNs pass, until it expires", async () => {
    const tunnel = tunnelUnderTest({ allowedDsns: [OTHER_TEST_DSN], spool: { bucket } });
    let calls = 0;
    tunnel.sentry.answer = () => {
      calls += 1;
      if (calls > 1) return Response.json(SENTRY_OK);
      return new Response(null, { status: 429, headers: { "retry-after": "2", "x-sentry-rate-limits": "2:error:key" } });
    };
    const error = (dsn = TEST_DSN) => new TextEncoder().encode(`${JSON.stringify({ dsn })}\n{"type":"event"}\n{}\n`);
    const transaction = new TextEncoder().encode(`${JSON.stringify({ dsn: TEST_DSN })}\n{"type":"transaction"}\n{}\n`);

    expect((await tunnel.post(error())).status).toBe(429);
    const held = [];
    for (let sent = 0; sent < 10; sent += 1) held.push(await tunnel.post(error()));
    expect(held.map((response) => response.status)).toEqual(Array(10).fill(429));
    expect(held[0]!.headers.get("x-sentry-rate-limits")).toMatch(/^[12]:error:key$/);
    expect(Number(held[0]!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await held[0]!.json()).toMatchObject({ reason: "sentry_rate_limited" });
    expect(calls).toBe(1);
    // Sentry hears of what the edge held back, in one client report, as the SDK would tell it.
    await tunnel.tunnel.clientShare.reports.flush();
    expect(tunnel.sentry.clientReports()).toEqual([[{ reason: "ratelimit_backoff", category: "error", quantity: 10 }]]);

    const reportsSoFar = calls;
    expect((await tunnel.post(transaction)).status).toBe(200);
    expect((await tunnel.post(error(OTHER_TEST_DSN), {}, "/monitoring?o=4501&p=4503&r=us")).status).toBe(200);
    expect(calls).toBe(reportsSoFar + 2);

    // The limit said 2 s: after it, errors go to Sentry again.
    await eventually(async () => (await tunnel.post(error())).status === 200, 5_000, { pollMs: 100 });
    expect(calls).toBe(reportsSoFar + 3);
  });
});

describe("the spool's consumer", () => {
  /** A message as the tunnel stores one for the app's DSN, received `receivedAt`. */
  const message = (body: Uint8Array, receivedAt: number, headers: Record<string, string> = {}): SpooledEnvelope => ({
    dsn: TEST_DSN,
    headers: { "content-type": "application/x-sentry-envelope", ...headers },
    receivedAt,
    body,
  });

  async function consume(tunnel: TunnelUnderTest, ...messages: SpooledEnvelope[]) {
    const batch = batchOf("tunnel-spool", messages);
    await tunnel.tunnel.queue(batch);
    return getQueueResult(batch, createExecutionContext());
  }
  const spoolLines = (tunnel: TunnelUnderTest) => tunnel.lines.filter((line) => line.event === "tunnel_spool");

  it("delivers an envelope stored an hour ago with its sent_at moved by the wait, and its events untouched", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket, ...FAST_RETRIES } });
    const hourAgo = new Date(Date.now() - 61 * 60 * 1000);
    const { body } = envelope({ sentAt: hourAgo });
    expect((await consume(tunnel, message(body, hourAgo.getTime()))).explicitAcks).toEqual(["0"]);
    const [took] = tunnel.sentry.took;
    // Relay would see no drift past its 55 minutes: sent_at is about the time of delivery.
    expect(Math.abs(Date.now() - Date.parse(headerOf(took!.body).sent_at as string))).toBeLessThan(60_000);
    const [sent, arrived] = [content(body, false), content(took!.body, false)];
    expect(arrived.header).toEqual(sent.header);
    expect(equalBytes(arrived.rest, sent.rest)).toBe(true);
  });

  it("sends a sent_at it cannot move as it was, rather than retrying it for ever", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket, ...FAST_RETRIES } });
    const odd = new TextEncoder().encode(`${JSON.stringify({ dsn: TEST_DSN, event_id: "b".repeat(32), sent_at: "+275760-09-13T00:00:00.000Z" })}\n{"type":"event"}\n{}\n`);
    expect((await consume(tunnel, message(odd, Date.now() - 60_000))).explicitAcks).toEqual(["0"]);
    expect(equalBytes(tunnel.sentry.took[0]!.body, odd)).toBe(true);
  });

  it("keeps a gzip body compressed: a 19 MiB bomb of 19 KiB goes out at its own size, its sent_at moved", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket, ...FAST_RETRIES } });
    const hourAgo = new Date(Date.now() - 61 * 60 * 1000);
    const plain = concat(
      new TextEncoder().encode(`${JSON.stringify({ dsn: TEST_DSN, event_id: "c".repeat(32), sent_at: hourAgo.toISOString() })}\n{"type":"attachment","length":${19 * MiB}}\n`),
      new Uint8Array(19 * MiB),
    );
    const bomb = new Uint8Array(gzipSync(plain));
    expect((await consume(tunnel, message(bomb, hourAgo.getTime(), { "content-encoding": "gzip" }))).explicitAcks).toEqual(["0"]);
    const [took] = tunnel.sentry.took;
    expect(took!.headers.get("content-encoding")).toBe("gzip");
    expect(took!.body.byteLength).toBeLessThanOrEqual(bomb.byteLength + 32);
    expect(Math.abs(Date.now() - Date.parse(headerOf(new Uint8Array(gunzipSync(took!.body))).sent_at as string))).toBeLessThan(60_000);
  });

  it("drops an envelope older than 24 hours, with a log line, and never sends it", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket, ...FAST_RETRIES } });
    const old = Date.now() - 25 * 60 * 60 * 1000;
    await consume(tunnel, message(envelope({ sentAt: new Date(old) }).body, old));
    expect(spoolLines(tunnel)).toMatchObject([{ outcome: "expired" }]);
    // What reaches Sentry is only the edge's word that it gave one error up.
    await tunnel.tunnel.clientShare.reports.flush();
    expect(tunnel.sentry.clientReports()).toEqual([[{ reason: "network_error", category: "error", quantity: 1 }]]);
    expect(tunnel.sentry.envelopes()).toEqual([]);
  });

  it("asks Sentry no more while it is down however deep the backlog: a batch's first envelope finds it down, and the rest wait unasked", async () => {
    const requestsFor = async (backlog: number) => {
      // The README's retry delay, 10 s: the consumer's probe comes once in that, far longer than this takes.
      const tunnel = tunnelUnderTest({ spool: { bucket } });
      tunnel.sentry.answer = busy;
      const messages = Array.from({ length: backlog }, () => message(envelope().body, Date.now()));
      // In batches as the queue hands them over, each one whole before the next.
      for (let at = 0; at < messages.length; at += 100) await consume(tunnel, ...messages.slice(at, at + 100));
      const lines = tunnel.lines.filter((line) => line.event === "tunnel_spool_batch");
      return { requests: tunnel.sentry.arrivals, waiting: lines.reduce((sum, line) => sum + line.retried + line.deferred, 0) };
    };
    const small = await requestsFor(30);
    const large = await requestsFor(600);
    expect(small).toEqual({ requests: small.requests, waiting: 30 });
    expect(large).toEqual({ requests: small.requests, waiting: 600 });
    expect(small.requests).toBe(1);
  });

  it("drops an envelope that Sentry answers with a redirect, which is never followed", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket, ...FAST_RETRIES } });
    tunnel.sentry.answer = () => new Response(null, { status: 307, headers: { location: "https://o4501.ingest.us.sentry.io/elsewhere" } });
    await consume(tunnel, message(envelope().body, Date.now()));
    expect(spoolLines(tunnel)).toEqual([expect.objectContaining({ outcome: "dropped" })]);
    expect(tunnel.sentry.took.map((took) => new URL(took.url).pathname)).toEqual(["/api/4502/envelope/"]);
  });

  it("drops an envelope that Sentry refuses with a 4xx, and retries one it answers 503", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket, ...FAST_RETRIES } });
    tunnel.sentry.answer = () => new Response(null, { status: 400 });
    await consume(tunnel, message(envelope().body, Date.now()));
    expect(spoolLines(tunnel)).toEqual([expect.objectContaining({ outcome: "dropped", upstream_status: 400 })]);

    tunnel.sentry.answer = busy;
    // Retried by the queue, with a delay: nothing written, nothing acknowledged, and counted in its batch's line.
    const retried = await consume(tunnel, message(envelope().body, Date.now()));
    expect(retried.retryMessages).toEqual([{ msgId: "0" }]);
    expect(retried.explicitAcks).toEqual([]);
    expect(tunnel.stored).toEqual([]);
    expect(tunnel.lines.at(-1)).toMatchObject({ event: "tunnel_spool_batch", messages: 1, retried: 1, deferred: 0 });
    expect(spoolLines(tunnel)).toHaveLength(1);
  });

  it("gives up a dead-lettered envelope at once: its R2 object deleted, the message acknowledged, the outcome logged", async () => {
    const tunnel = tunnelUnderTest({ spool: { bucket } });
    await bucket.put("spool/dead-one", envelope({ attachmentBytes: 200_000 }).body);
    const dead: SpooledEnvelope = { headers: { "content-type": "application/x-sentry-envelope" }, dsn: TEST_DSN, receivedAt: Date.now(), tries: 5, key: "spool/dead-one" };
    const batch = batchOf("tunnel-spool-dead", [dead]);
    await tunnel.tunnel.queue(batch);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks).toEqual(["0"]);
    expect(await spoolObjects()).toEqual([]);
    expect(tunnel.lines).toMatchObject([{ event: "tunnel_spool", outcome: "dead_lettered", tries: 5 }]);
  });
});

describe("the spool's bounds", () => {
  it("stores at most a client's byte budget, answers 503 with Retry-After past it, stores other clients' still, and tells Sentry", async () => {
    // Miniflare's Rate Limiting, three 256 KiB units per client per minute (`vitest.config.ts`), so that the test reaches the budget quickly.
    const tunnel = tunnelUnderTest({ timeoutMs: 1500, spool: { bucket, clientBudget: bindings.TUNNEL_SPOOL_CLIENT_BUDGET, ...FAST_RETRIES } });
    tunnel.sentry.answer = busy;
    const fill = async (client: string) => {
      const statuses: number[] = [];
      for (let sent = 0; sent < 24; sent += 1) {
        const response = await tunnel.post(envelope({ attachmentBytes: 60_000 }).body, { "cf-connecting-ip": client });
        statuses.push(response.status);
        if (response.status === 503) {
          expect(response.headers.get("retry-after")).toBe("60");
          expect(await response.json()).toMatchObject({ reason: "spool_full" });
        }
      }
      return statuses;
    };
    // The budget's windows are a minute long from the epoch, as Cloudflare's are: a run that crosses
    // the edge of one is given a fresh budget halfway, so it runs again, on another client, in the next.
    let statuses: number[] = [];
    const all: number[] = [];
    for (const client of ["203.0.113.60", "203.0.113.70"]) {
      const window = Math.floor(Date.now() / 60_000);
      statuses = await fill(client);
      all.push(...statuses);
      if (Math.floor(Date.now() / 60_000) === window) break;
    }
    const refused = statuses.filter((status) => status === 503).length;
    const stored = statuses.length - refused;
    // Stored until the budget ran out (3 units of 256 KiB, and what is carried short of a unit), then refused.
    expect(statuses).toEqual([...Array<number>(stored).fill(202), ...Array<number>(refused).fill(503)]);
    expect(stored * 60_000).toBeLessThanOrEqual(4 * 256 * 1024);
    expect(refused).toBeGreaterThan(0);
    expect((await tunnel.post(envelope({ attachmentBytes: 60_000 }).body, { "cf-connecting-ip": "203.0.113.61" })).status).toBe(202);

    tunnel.sentry.answer = () => Response.json(SENTRY_OK);
    const triedLive = tunnel.sentry.envelopes().length;
    await drain(tunnel);
    const count = (status: number) => all.filter((each) => each === status).length;
    expect(tunnel.sentry.envelopes().length - triedLive).toBe(count(202) + 1);
    await tunnel.tunnel.clientShare.reports.flush();
    expect(tunnel.sentry.clientReports()).toEqual([[{ reason: "queue_overflow", category: "attachment", quantity: count(503) }]]);
  });
});

describe("the breaker, fair to Sentry and to clients", () => {
  it("lets no slow client open the breaker: a body whose last byte comes just before the deadline is answered live, once", { timeout: 30_000 }, async () => {
    // A 10 s deadline gives Sentry 5 s after the body's last byte. The bodies end some 8 s in, and
    // Sentry answers after the deadline itself, 11 s in: only that share lets the answer be live.
    // Each timer may fire 2 s late (the body's end before 10 s, the answer before 13 s) and the
    // verdict stands, which a loaded machine's timer delays do not reach; 0.3 s did not hold.
    const tunnel = tunnelUnderTest({ timeoutMs: 10_000, spool: { bucket, ...FAST_RETRIES } });
    const posted = Date.now();
    tunnel.sentry.answer = () => new Promise((resolve) => setTimeout(() => resolve(Response.json(SENTRY_OK)), posted + 11_000 - Date.now()));
    const trickled = async () => {
      const { id, body: whole } = envelope();
      let push!: (chunk: Uint8Array | null) => void;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          push = (chunk) => (chunk ? controller.enqueue(chunk) : controller.close());
        },
      });
      const answer = tunnel.post(body, { "content-length": String(whole.byteLength) });
      push(whole.subarray(0, 50));
      await new Promise((resolve) => setTimeout(resolve, posted + 8_000 - Date.now()));
      push(whole.subarray(50));
      push(null);
      return { id, response: await answer };
    };
    const results = await Promise.all([trickled(), trickled(), trickled(), trickled()]);
    expect(results.map(({ response }) => response.status)).toEqual([200, 200, 200, 200]);
    // The breaker stayed closed: a quick client's envelope goes to Sentry, not to the spool.
    expect((await tunnel.post(envelope().body)).status).toBe(200);
    const ids = tunnel.sentry.took.map((took) => headerOf(took.body).event_id);
    for (const { id } of results) expect(ids.filter((taken) => taken === id)).toHaveLength(1);
    expect(tunnel.stored).toEqual([]);
  });
});

describe("the spool's lines", () => {
  it("says the envelopes it stores while Sentry is known down once per project and window, each counted, and every one in its data point", async () => {
    let now = 1_800_000_000_000;
    const lines: LogLine[] = [];
    const points: AnalyticsEngineDataPoint[] = [];
    const stored: SpooledEnvelope[] = [];
    const sentry = new StubSentry();
    sentry.answer = busy;
    const tunnel = createTunnel(
      {
        dsn: TEST_DSN,
        allowedDsns: [OTHER_TEST_DSN],
        limiter: EVERY_CLIENT,
        analytics: { writeDataPoint: (point) => void points.push(point!) },
        spool: spool({ queue: { send: async (message) => void stored.push(message) }, clientBudget: EVERY_CLIENT, totalBudget: EVERY_CLIENT }),
      },
      { now: () => now, fetch: sentry.fetch, log: (line) => void lines.push(line) },
    );
    const post = async (dsn: string) => {
      const { body } = envelope({ dsn });
      const request = new Request(`https://app.example${tunnel.pageUrl(dsn)}`, { method: "POST", body, headers: { "content-length": String(body.byteLength) } });
      const response = (await tunnel.handle(request))!;
      await response.arrayBuffer();
      return response.status;
    };
    const statuses: number[] = [];
    // Three failures open each project's breaker; then 200 envelopes stored unasked, over 20 s:
    // three windows of the limiter's 10 s, within the breaker's cool-down, so no probe.
    for (const dsn of [TEST_DSN, OTHER_TEST_DSN]) for (let failure = 0; failure < 3; failure += 1) statuses.push(await post(dsn));
    const asked = sentry.arrivals;
    for (let request = 0; request < 200; request += 1) {
      now += 100;
      statuses.push(await post(request % 2 === 0 ? TEST_DSN : OTHER_TEST_DSN));
    }
    expect(sentry.arrivals).toBe(asked);
    // A later window's request, of any kind, brings out what is still held.
    now += 20_000;
    await tunnel.handle(new Request(`https://app.example${tunnel.pageUrl()}`));

    expect(new Set(statuses)).toEqual(new Set([202]));
    expect(stored).toHaveLength(206);
    expect(points.filter((point) => point.blobs?.[0] === "spooled")).toHaveLength(206);
    const spooled = lines.filter((line): line is Extract<LogLine, { event: "tunnel" }> => line.event === "tunnel" && line.outcome === "spooled");
    const unasked = spooled.filter((line) => line.upstream_status === null);
    // Each failure that opened a breaker has its own line; then at most a line per project and window, and one to flush.
    expect(spooled.filter((line) => line.upstream_status === 503)).toHaveLength(6);
    expect(unasked.length).toBeLessThanOrEqual(2 * 4);
    const counted = (project: string) => unasked.filter((line) => line.project === project).reduce((sum, line) => sum + 1 + (line.repeats ?? 0), 0);
    expect({ 4502: counted("4502"), 4503: counted("4503") }).toEqual({ 4502: 100, 4503: 100 });
  });

  it("keeps a line for each envelope it could not store while Sentry is known down: a loss is not the same news", async () => {
    const lines: LogLine[] = [];
    const sentry = new StubSentry();
    sentry.answer = busy;
    // A client's byte budget that is spent: the first whole 256 KiB unit it asks for is refused.
    const spent = { limit: async () => ({ success: false }) };
    const tunnel = createTunnel(
      {
        dsn: TEST_DSN,
        limiter: EVERY_CLIENT,
        spool: spool({ queue: { send: async () => {} }, bucket, clientBudget: spent, totalBudget: EVERY_CLIENT, queueName: "spent-spool", deadLetterQueueName: "spent-dead" }),
      },
      { fetch: sentry.fetch, log: (line) => void lines.push(line) },
    );
    const post = async (body: Uint8Array) => {
      const request = new Request(`https://app.example${tunnel.pageUrl()}`, { method: "POST", body, headers: { "content-length": String(body.byteLength) } });
      const response = (await tunnel.handle(request))!;
      return [response.status, ((await response.json()) as { reason: string }).reason];
    };
    // Three small ones, short of a unit, are stored as Sentry fails under them, and open the breaker.
    for (let failure = 0; failure < 3; failure += 1) expect(await post(envelope().body)).toEqual([202, "spooled"]);
    for (let lost = 0; lost < 4; lost += 1) expect(await post(envelope({ attachmentBytes: 300_000 }).body)).toEqual([503, "spool_full"]);
    expect(sentry.arrivals).toBe(3);
    expect(lines.filter((line) => line.event === "tunnel" && line.reason === "spool_full")).toHaveLength(4);
  });
});

describe("what the spool cannot keep is said", () => {
  /** A binding's call that never answers: only the request's bound ends the wait. */
  const hangs = () => new Promise<never>(() => {});
  const refuses = async () => Promise.reject(new Error("the binding failed"));
  const MiB = 1024 * 1024;
  const small = () => envelope().body;
  const large = () => envelope({ attachmentBytes: 300_000 }).body;
  const streamed = () => chunked(envelope({ attachmentBytes: 100_000 }).body);
  type Failing = [string, Partial<SpoolOptions>, string, (() => Uint8Array | ReadableStream<Uint8Array>)[]];
  // Each kind of body: small, read whole in hand, and (while Sentry is still asked) streamed of unknown length.
  const failing: Failing[] = [
    ["the queue rejects", { queue: { send: refuses }, bucket }, "spool.queue", [small, large, streamed, small, large, small]],
    ["the bucket rejects", { bucket: { ...bucket, put: refuses, get: bucket.get.bind(bucket), delete: bucket.delete.bind(bucket) } as unknown as R2Bucket }, "spool.bucket", [large, large, streamed, large, large, large]],
    ["the client's budget rejects", { bucket, clientBudget: { limit: refuses } }, "spool.clientBudget", [large, large, large, large, large, large]],
    ["the client's budget never answers", { bucket, clientBudget: { limit: hangs } }, "spool.clientBudget", [large, large, large, large, large, large]],
    ["the queue never answers", { queue: { send: hangs } }, "spool.queue", [small, small, small, small, small, small]],
  ];

  it.each(failing)("answers 503 spool_unavailable when %s, names it in the line, counts it for Sentry, and asks Sentry no more once it is known down", { timeout: 30_000 }, async (_case, spool, binding, bodies) => {
    const tunnel = tunnelUnderTest({ timeoutMs: 800, spool });
    tunnel.sentry.answer = busy;
    const answers = [];
    for (const body of bodies) {
      const response = await tunnel.post(body());
      answers.push([response.status, ((await response.json()) as { reason: string }).reason]);
    }
    expect(answers).toEqual(bodies.map(() => [503, "spool_unavailable"]));
    const lost = tunnel.lines.filter((line) => line.event === "tunnel");
    expect(lost).toEqual(bodies.map(() => expect.objectContaining({ outcome: "failed", reason: "spool_unavailable", binding })));
    // Three failures open the breaker: the envelopes after them are not sent to Sentry again.
    expect(tunnel.sentry.arrivals).toBe(3);
    tunnel.sentry.answer = () => Response.json(SENTRY_OK);
    await tunnel.tunnel.clientShare.reports.flush();
    const counted = tunnel.sentry.clientReports().flat() as { reason: string; quantity: number }[];
    expect(counted.filter((count) => count.reason === "network_error").reduce((sum, count) => sum + count.quantity, 0)).toBe(bodies.length);
    expect(await spoolObjects()).toEqual([]);
  });

  it("stores within a share of its own what Sentry timed out under, and answers a binding that never answers by then", { timeout: 30_000 }, async () => {
    const tunnel = tunnelUnderTest({ timeoutMs: 600, spool: { queue: { send: hangs } } });
    tunnel.sentry.answer = neverAnswers;
    const started = Date.now();
    const response = await tunnel.post(small());
    expect([response.status, ((await response.json()) as { reason: string }).reason]).toEqual([503, "spool_unavailable"]);
    // The deadline (600 ms), then the spool's share of it (300 ms), and no wait for ever.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(tunnel.lines.filter((line) => line.event === "tunnel")).toEqual([expect.objectContaining({ reason: "spool_unavailable", binding: "spool.queue" })]);
  });

  it("lets no client pin the memory kept in hand: bodies that are declared, or sent without a length, and never come hold nothing, and a visitor's envelope Sentry fails under is stored", { timeout: 30_000 }, async () => {
    const tunnel = tunnelUnderTest({ timeoutMs: 3000, spool: { bucket } });
    tunnel.sentry.answer = busy;
    // Two strangers from one address each declare 16 MiB, half of the 32 MiB kept in hand: one sends
    // nothing after its headers, one its header line and a few bytes, and each then stalls.
    let asked = 0;
    const stalls = (start: Uint8Array) => {
      let pulled = false;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (!pulled && start.byteLength > 0) controller.enqueue(start);
          if (!pulled) asked += 1;
          pulled = true;
          return new Promise<void>(() => {});
        },
      });
    };
    const header = envelope().body.subarray(0, 200);
    const declared = { "content-length": String(16 * MiB), "cf-connecting-ip": "198.51.100.7" };
    // Two more send their header line with no length at all (chunked), and stall: each may yet be 16 MiB.
    const unstated = { "cf-connecting-ip": "198.51.100.7" };
    const strangers = [
      tunnel.post(stalls(new Uint8Array()), declared),
      tunnel.post(stalls(header), declared),
      tunnel.post(stalls(header), unstated),
      tunnel.post(stalls(header), unstated),
    ];
    await eventually(() => asked >= 4);
    // Nearly as large as a body held in hand may be: it fits only if the strangers hold no more than what they sent.
    const visitor = envelope({ attachmentBytes: Math.floor(15.8 * MiB) }).body;
    const answer = await tunnel.post(visitor);
    expect([answer.status, ((await answer.json()) as { reason: string }).reason]).toEqual([202, "spooled"]);
    expect(await spoolObjects()).toEqual([visitor.byteLength]);
    expect((await Promise.all(strangers)).map((response) => response.status)).toEqual([408, 408, 408, 408]);
    await Promise.all(tunnel.stored.map((message) => message.key && bucket.delete(message.key)));
  });
});

describe("bindings given as the wrong thing", () => {
  it.each([
    ["TUNNEL_ANALYTICS", "off", "TUNNEL_ANALYTICS is not a Workers Analytics Engine dataset (got \"off\"): pass a [[analytics_engine_datasets]] binding"],
    ["TUNNEL_SPOOL_BUCKET", "tunnel-spool", "TUNNEL_SPOOL_BUCKET is not an R2 bucket binding (got \"tunnel-spool\"): pass a [[r2_buckets]] binding"],
    ["TUNNEL_SPOOL", "tunnel-spool", "TUNNEL_SPOOL is not a Queue binding (got \"tunnel-spool\"): pass a [[queues.producers]] binding"],
    ["TUNNEL_SPOOL_TOTAL_BUDGET", "10", "TUNNEL_SPOOL_TOTAL_BUDGET is not a Workers Rate Limiting binding (got \"10\"): pass a [[ratelimits]] binding"],
  ])("refuses %s set as text in [vars], naming it, when the tunnel is built", (name, text, message) => {
    const env = { SENTRY_DSN: TEST_DSN, TUNNEL_RATE_LIMITER: EVERY_CLIENT, TUNNEL_SPOOL: { send: async () => {} }, TUNNEL_SPOOL_CLIENT_BUDGET: EVERY_CLIENT, TUNNEL_SPOOL_TOTAL_BUDGET: EVERY_CLIENT, [name]: text };
    expect(configRefusal(() => createTunnel({ ...optionsFromEnv(env), spool: spoolFromEnv(env) }))).toEqual({ variable: name, message });
  });

  it("refuses the wrong object given in code, naming the option", () => {
    const queue = { send: async () => {} };
    const wholeEnv = env as unknown as AnalyticsEngineDataset;
    expect(configRefusal(() => createTunnel({ dsn: TEST_DSN, limiter: EVERY_CLIENT, analytics: wholeEnv }))).toMatchObject({
      variable: "analytics",
      message: "analytics is not a Workers Analytics Engine dataset (it has no writeDataPoint() method): pass a [[analytics_engine_datasets]] binding",
    });
    const bucketNamed = "tunnel-spool" as unknown as R2Bucket;
    expect(configRefusal(() => createTunnel({ dsn: TEST_DSN, limiter: "off", spool: spool({ queue, bucket: bucketNamed }) }))).toMatchObject({ variable: "spool.bucket" });
  });
});
