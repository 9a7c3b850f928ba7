import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

import type { LogLine } from "./log-line.ts";
import { readTunnelSettings, type TunnelBindings } from "./settings.ts";
import type { SpooledEnvelope, SpoolQueue } from "./spool/store.ts";
import { createTunnelWorker } from "./worker.ts";

/**
 * The spool where it runs: in workerd (Cloudflare's vitest integration), the tunnel as
 * `createTunnelWorker` builds it, Miniflare's own R2, and the consumer and the dead-letter handler
 * handed the integration's message batches. Sentry is a stub `fetch`; no socket is opened.
 */
const DSN = "https://0123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4502";
const ROUTE = "/6b1xzn8op8";
const bucket = (env as unknown as { TUNNEL_SPOOL_BUCKET: R2Bucket }).TUNNEL_SPOOL_BUCKET;

async function sha256(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** An envelope as an SDK writes it: an event, or one attachment of random bytes. */
function envelope(attachmentBytes?: number): Uint8Array {
  const id = crypto.randomUUID().replaceAll("-", "");
  const head = new TextEncoder().encode(`${JSON.stringify({ dsn: DSN, event_id: id })}\n`);
  if (attachmentBytes === undefined) return new TextEncoder().encode(`${JSON.stringify({ dsn: DSN, event_id: id })}\n{"type":"event"}\n{"event_id":"${id}"}\n`);
  const itemHead = new TextEncoder().encode(`{"type":"attachment","length":${attachmentBytes}}\n`);
  const attachment = new Uint8Array(attachmentBytes);
  for (let at = 0; at < attachmentBytes; at += 65_536) crypto.getRandomValues(attachment.subarray(at, at + 65_536));
  const whole = new Uint8Array(head.length + itemHead.length + attachmentBytes + 1);
  whole.set(head);
  whole.set(itemHead, head.length);
  whole.set(attachment, head.length + itemHead.length);
  whole[whole.length - 1] = 0x0a;
  return whole;
}

/** A tunnel with Sentry a stub (down until told), its queue's messages kept for a batch, and its log lines. */
function tunnelWithStubs() {
  const sentry = { down: true, took: [] as string[] };
  const stored: SpooledEnvelope[] = [];
  const lines: LogLine[] = [];
  const fetch = (async (_url: RequestInfo | URL, init?: RequestInit) => {
    const body = await new Response(init?.body).arrayBuffer();
    if (sentry.down) return new Response("busy", { status: 503 });
    sentry.took.push(await sha256(body));
    return Response.json({ id: "0123456789abcdef0123456789abcdef" });
  }) as typeof globalThis.fetch;
  const bindings: TunnelBindings = {
    TUNNEL_RATE_LIMITER: { limit: async () => ({ success: true }) },
    TUNNEL_SPOOL: { send: async (message) => void stored.push(message) } satisfies SpoolQueue,
    TUNNEL_SPOOL_BUCKET: bucket,
  };
  const settings = readTunnelSettings({ SENTRY_DSN: DSN, TUNNEL_SPOOL_RETRY_SECONDS: "1", TUNNEL_TIMEOUT_MS: "2000" });
  const tunnel = createTunnelWorker(settings, bindings, { fetch, log: (line) => void lines.push(line) });
  // With its length declared, as browsers send it; a stream's is given by the test.
  const post = (body: Uint8Array | ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
    tunnel.fetch(
      new Request(`https://app.example${ROUTE}`, {
        method: "POST",
        body,
        headers: { "cf-connecting-ip": "198.18.0.1", ...(body instanceof Uint8Array ? { "content-length": String(body.byteLength) } : {}), ...headers },
      }),
    );
  return { tunnel, sentry, stored, lines, post };
}

/** The stored messages as the queue would hand them to `queue()`: one real batch. */
function batchOf(queue: string, stored: readonly SpooledEnvelope[]) {
  return createMessageBatch<unknown>(
    queue,
    stored.map((body, index) => ({ id: String(index), timestamp: new Date(), attempts: 1, body })),
  );
}

const spoolObjects = async () => (await bucket.list({ prefix: "spool/" })).objects.map((object) => object.size);

describe("the spool, in workerd, with Sentry a stub fetch", () => {
  it("streams a body too large for a message into R2 once the breaker is open, and the consumer delivers each byte for byte from a real batch", async () => {
    const { tunnel, sentry, stored, post } = tunnelWithStubs();
    // Three small ones fail live and are stored as messages; then the breaker is open.
    const small = [envelope(), envelope(), envelope()];
    for (const body of small) expect((await post(body)).status).toBe(202);
    const large = envelope(200_000);
    expect((await post(large)).status).toBe(202);
    expect(await spoolObjects()).toEqual([large.byteLength]);
    expect(stored.map((message) => message.key === undefined)).toEqual([true, true, true, false]);

    sentry.down = false;
    const batch = batchOf("tunnel-spool", stored);
    const context = createExecutionContext();
    await tunnel.queue(batch);
    const result = await getQueueResult(batch, context);
    expect(result.explicitAcks.sort()).toEqual(["0", "1", "2", "3"]);
    expect(result.retryMessages).toEqual([]);
    // Each went out as it came, but for the `sent_at` the consumer moves by the wait: none here.
    expect(sentry.took.sort()).toEqual((await Promise.all([...small, large].map(sha256))).sort());
    expect(await spoolObjects()).toEqual([]);
  });

  it("stores nothing and sends Sentry nothing of a streamed body whose client goes away half way, and logs the client's failure", async () => {
    const { sentry, stored, lines, post } = tunnelWithStubs();
    sentry.down = false;
    const large = envelope(200_000);
    let sent = false;
    const goesAway = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(new TypeError("The client went away"));
        sent = true;
        controller.enqueue(large.subarray(0, 100_000));
      },
    });
    const response = await post(goesAway, { "content-length": String(large.byteLength) });
    expect(response.status).toBe(400);
    expect(lines).toMatchObject([{ event: "tunnel", reason: "body_incomplete" }]);
    expect(stored).toEqual([]);
    expect(await spoolObjects()).toEqual([]);
    expect(sentry.took).toEqual([]);
  });

  it("gives up a dead-lettered envelope at once: its R2 object deleted, the message acknowledged, the outcome logged", async () => {
    const { tunnel, lines } = tunnelWithStubs();
    await bucket.put("spool/dead-one", envelope(200_000));
    const dead: SpooledEnvelope = { headers: { "content-type": "application/x-sentry-envelope" }, dsn: DSN, receivedAt: Date.now(), tries: 5, key: "spool/dead-one" };
    const batch = batchOf("tunnel-spool-dead", [dead]);
    const context = createExecutionContext();
    await tunnel.queue(batch);
    expect((await getQueueResult(batch, context)).explicitAcks).toEqual(["0"]);
    expect(await spoolObjects()).toEqual([]);
    expect(lines).toMatchObject([{ event: "tunnel_spool", outcome: "dead_lettered", tries: 5 }]);
  });
});
