import { createHash } from "node:crypto";
import { request as httpRequest } from "node:http";

import { describe, expect, it } from "vitest";

import { buildEnvelope } from "../../support/envelopes";
import { eventually } from "../../support/eventually";
import { APP_DSN, APP_ROUTE } from "../../support/worker";
import { useWorkerdCases } from "../../support/workerd-cases";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/**
 * The spool's streamed path and its consumer, in workerd: the tunnel as `createTunnelWorker` builds
 * it, Sentry a stub `fetch`, the queue and R2 Miniflare's, so that `queue()` gets real batches.
 */
describe("the spool, in workerd, with Sentry a stub fetch", { timeout: 30_000 }, () => {
  const cases = useWorkerdCases("test/worker/tunnel/spool.workerd.ts", {
    bindings: { SENTRY_DSN: APP_DSN, TUNNEL_SPOOL_RETRY_SECONDS: "1", TUNNEL_TIMEOUT_MS: "2000" },
    queueProducers: { TUNNEL_SPOOL: { queueName: "tunnel-spool" } },
    queueConsumers: { "tunnel-spool": { maxBatchSize: 10, maxBatchTimeout: 1, maxRetries: 5 } },
    r2Buckets: ["TUNNEL_SPOOL_BUCKET"],
  });
  const post = (body: Buffer) => cases.worker().fetch(APP_ROUTE, { method: "POST", body: new Uint8Array(body) });

  it("streams a body too large for a message into R2 once the breaker is open, and the consumer delivers it byte for byte from a real batch", async () => {
    // Three small ones fail live and are stored as messages; then the breaker is open.
    const small = [1, 2, 3].map(() => buildEnvelope().body);
    for (const body of small) expect((await post(body)).status).toBe(202);
    const large = buildEnvelope({ attachmentBytes: 200_000 }).body;
    expect((await post(large)).status).toBe(202);
    expect(await cases.run<number[]>("spoolObjects")).toEqual([large.byteLength]);

    await cases.run("sentryUp");
    const took = () => cases.run<{ length: number; sha256: string }[]>("sentryTook");
    await eventually(async () => (await took()).length === 4, 20_000, { pollMs: 200, saw: took });
    // Each went out as it came, but for the `sent_at` the consumer moves by the wait: none here.
    expect((await took()).map((envelope) => envelope.sha256).sort()).toEqual([...small, large].map(sha256).sort());
    expect(await cases.run("spoolObjects")).toEqual([]);
    const batches = await cases.run<{ queue: string; messages: number }[]>("batches");
    expect(batches.length).toBeGreaterThan(0);
    expect(batches.every((batch) => batch.queue === "tunnel-spool" && batch.messages > 0)).toBe(true);
  });

  it("stores nothing and sends Sentry nothing of a streamed body whose client goes away half way, and logs the client's failure, not the spool's", async () => {
    const tookBefore = (await cases.run<unknown[]>("sentryTook")).length;
    const large = buildEnvelope({ attachmentBytes: 200_000 }).body;
    const request = httpRequest(new URL(`${cases.worker().origin}${APP_ROUTE}`), { method: "POST", headers: { "content-length": String(large.byteLength) }, agent: false });
    request.on("error", () => {});
    request.write(large.subarray(0, 100_000), () => request.destroy());
    const lines = () => cases.worker().logLines<{ reason: string | null }>("tunnel");
    // The client's going away, or the deadline it left the body to, whichever the runtime tells first.
    await eventually(() => lines().some((line) => line.reason === "body_incomplete" || line.reason === "body_timeout"), 10_000, { saw: lines });
    expect(await cases.run("spoolObjects")).toEqual([]);
    expect(await cases.run<unknown[]>("sentryTook")).toHaveLength(tookBefore);
  });
});
