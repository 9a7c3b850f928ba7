/**
 * The tunnel and its spool as `createTunnelWorker` builds them, inside workerd, with Sentry a stub
 * `fetch` and the spool's real bindings (Miniflare's queue, which hands `queue()` real
 * `MessageBatch`es, and R2). The Node side, `spool.test.ts`, posts envelopes and runs the
 * cases below to switch Sentry and to read what it and R2 hold. No socket reaches Sentry.
 */
import { env } from "cloudflare:workers";

import { createTunnelWorker, readTunnelSettings, type TunnelBindings, type TunnelVariables } from "@edge-monitoring/tunnel";

import { serveCases } from "../../support/serve-cases";

/** Sentry: down (503) or up (200), and the envelopes it took, in order. */
const sentry = { down: true, took: [] as { length: number; sha256: string }[] };

async function sha256(bytes: ArrayBuffer): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

const stubFetch = (async (_url: RequestInfo | URL, init?: RequestInit) => {
  const body = await new Response(init?.body).arrayBuffer();
  if (sentry.down) return new Response("busy", { status: 503 });
  sentry.took.push({ length: body.byteLength, sha256: await sha256(body) });
  return Response.json({ id: "0123456789abcdef0123456789abcdef" });
}) as typeof fetch;

const bindings = env as unknown as TunnelBindings & TunnelVariables;
/** What each `queue()` call was handed: a real batch, from Miniflare's queue. */
const batches: { queue: string; messages: number; attempts: number[] }[] = [];
const tunnel = createTunnelWorker(readTunnelSettings(bindings), bindings, { fetch: stubFetch });

const cases = serveCases({
  sentryUp: async () => void (sentry.down = false),
  sentryTook: async () => sentry.took,
  batches: async () => batches,
  spoolObjects: async () => (await bindings.TUNNEL_SPOOL_BUCKET!.list({ prefix: "spool/" })).objects.map((object) => object.size),
});

export default {
  fetch(request: Request): Promise<Response> {
    return tunnel.serves(new URL(request.url).pathname) ? tunnel.fetch(request) : cases.fetch(request);
  },
  queue(batch: MessageBatch<unknown>): Promise<void> {
    batches.push({ queue: batch.queue, messages: batch.messages.length, attempts: batch.messages.map((message) => message.attempts) });
    return tunnel.queue(batch);
  },
};
