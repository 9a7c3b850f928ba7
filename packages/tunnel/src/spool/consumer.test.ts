import { describe, expect, it, vi } from "vitest";

import { StubSentry } from "../testing/harness.ts";
import { compileAllowList } from "../upstream/allow-list.ts";
import type { ClientReports } from "../upstream/client-reports.ts";
import { parseDsn } from "../upstream/dsn.ts";
import { UpstreamBreaker } from "../upstream/breaker.ts";
import { SentryLimits } from "../upstream/sentry-limits.ts";
import { createSpoolConsumer } from "./consumer.ts";
import { createDeadLetterConsumer } from "./dead-letters.ts";
import { createSpoolRecorder, type SpoolLine } from "./record.ts";
import type { SpooledEnvelope } from "./store.ts";

const DSN = "https://k@o1.ingest.us.sentry.io/2";
const NOW = Date.UTC(2027, 0, 1);

function message(body: unknown, attempts = 1) {
  return { id: "m", timestamp: new Date(NOW), attempts, body, ack: vi.fn(), retry: vi.fn() };
}

function stored(overrides: Partial<SpooledEnvelope> = {}): SpooledEnvelope {
  const body = new TextEncoder().encode(`{"dsn":"${DSN}"}\n{"type":"event"}\n{}\n`);
  return { headers: {}, dsn: DSN, receivedAt: NOW - 60_000, body, ...overrides };
}

function runtime(answer: () => Response | Promise<Response>) {
  const sentry = new StubSentry();
  sentry.answer = answer;
  const counted: [string, string, readonly string[]][] = [];
  const reports: ClientReports = { count: (...args) => void counted.push(args), flush: async () => {} };
  const sent: [SpooledEnvelope, QueueSendOptions][] = [];
  const deleted: string[] = [];
  const upstream = "https://o1.ingest.us.sentry.io/api/2/envelope/?hsts=0";
  const bucket = { delete: async (key: string) => void deleted.push(key), get: async () => null } as unknown as R2Bucket;
  const lines: SpoolLine[] = [];
  const dataPoints: AnalyticsEngineDataPoint[] = [];
  return {
    sentry,
    counted,
    sent,
    deleted,
    lines,
    dataPoints,
    value: {
      queue: { send: async (envelope: SpooledEnvelope, options?: QueueSendOptions) => void sent.push([envelope, options!]) },
      bucket,
      allowList: compileAllowList([parseDsn(DSN)!], undefined),
      limits: new SentryLimits(() => NOW),
      breakers: new Map([[upstream, new UpstreamBreaker(() => NOW, { failuresToOpen: 1, coolDownMs: 10_000 })]]),
      reports,
      record: createSpoolRecorder({ log: (line) => void lines.push(line), analytics: { writeDataPoint: (point) => void dataPoints.push(point!) } }),
      now: () => NOW,
      random: () => 0.5,
      fetch: sentry.fetch,
    },
  };
}

const settings = { timeoutMs: 1_000, maxEnvelopeBytes: 1_000_000, spoolRetrySeconds: 10, spoolMaxRetries: 5, ownProject: undefined };

async function consume(fakes: ReturnType<typeof runtime>, ...messages: ReturnType<typeof message>[]) {
  const consumer = createSpoolConsumer(settings, fakes.value);
  await consumer({ queue: "tunnel-spool", messages, retryAll() {}, ackAll() {} } as unknown as MessageBatch<unknown>);
}

describe("the spool's consumer, with a fake batch", () => {
  it("retries the message itself with its delay, writing nothing, and sums it in the batch's line with the queue's depth", async () => {
    const fakes = runtime(() => new Response("busy", { status: 503 }));
    const held = message(stored({ tries: 2 }));
    const consumer = createSpoolConsumer(settings, fakes.value);
    const metrics = { backlogCount: 7, backlogBytes: 70_000, oldestMessageTimestamp: new Date(NOW - 90_000) };
    await consumer({ queue: "tunnel-spool", messages: [held], metadata: { metrics }, retryAll() {}, ackAll() {} } as unknown as MessageBatch<unknown>);
    expect(held.retry).toHaveBeenCalledWith({ delaySeconds: 40 });
    expect(held.ack).not.toHaveBeenCalled();
    expect(fakes.sent).toEqual([]);
    expect(fakes.lines).toEqual([{ event: "tunnel_spool_batch", messages: 1, delivered: 0, retried: 1, deferred: 0, backlog_count: 7, backlog_bytes: 70_000, oldest_age_s: 90 }]);
  });

  it("sends a message the queue has delivered max_retries times again as a new one, and acknowledges the old, so the queue never dead-letters it for waiting", async () => {
    const fakes = runtime(() => new Response("busy", { status: 503 }));
    const old = message(stored({ tries: 2 }), 5);
    await consume(fakes, old);
    expect(old.ack).toHaveBeenCalledOnce();
    expect(old.retry).not.toHaveBeenCalled();
    // Two failures before, four deliveries of this message since: seven with this one.
    expect(fakes.sent).toEqual([[expect.objectContaining({ tries: 7 }), { contentType: "v8", delaySeconds: 640 }]]);
  });

  it("asks Sentry once per probe while its breaker is open, and defers the rest without a request or a read of R2", async () => {
    let asked = 0;
    const fakes = runtime(() => (asked++, new Response("busy", { status: 503 })));
    const breaker = fakes.value.breakers.values().next().value!;
    breaker.failed();
    // Open, and its cool-down just begun: no probe is due, and every message waits.
    expect(breaker.allows()).toBe(false);
    fakes.value.bucket = { get: async () => Promise.reject(new Error("R2 must not be read")) } as unknown as R2Bucket;
    const messages = Array.from({ length: 50 }, (_, index) => message(stored(index % 2 ? {} : { body: undefined, key: `spool/${index}` })));
    await consume(fakes, ...messages);
    expect(asked).toBe(0);
    expect(messages.every((held) => held.retry.mock.calls.length === 1 && held.ack.mock.calls.length === 0)).toBe(true);
    expect(fakes.lines).toEqual([expect.objectContaining({ event: "tunnel_spool_batch", messages: 50, retried: 0, deferred: 50 })]);
  });

  it("delivers a stored envelope to the allow-list's URL for its DSN, whatever URL an older version wrote beside it", async () => {
    const fakes = runtime(() => new Response("{}"));
    const delivered = message({ ...stored(), url: "https://elsewhere.example/api/2/envelope/" });
    await consume(fakes, delivered);
    expect(fakes.lines).toEqual([expect.objectContaining({ outcome: "delivered" }), expect.objectContaining({ event: "tunnel_spool_batch", delivered: 1, retried: 0 })]);
    expect(fakes.sentry.took.map((took) => took.url)).toEqual(["https://o1.ingest.us.sentry.io/api/2/envelope/?hsts=0"]);
  });

  it("acknowledges a message that is not a stored envelope, and logs it, without retrying it", async () => {
    const fakes = runtime(() => new Response("{}"));
    const poison = message({ hello: "world" });
    await consume(fakes, poison);
    expect(poison.ack).toHaveBeenCalledOnce();
    expect(fakes.lines[0]).toEqual(expect.objectContaining({ outcome: "poison" }));
  });

  it("deletes the R2 object of an envelope it gives up, in the same step, and counts it", async () => {
    const fakes = runtime(() => new Response("{}"));
    const expired = message(stored({ body: undefined, key: "spool/2026-12-30/x", receivedAt: NOW - 25 * 3_600_000 }));
    await consume(fakes, expired);
    expect(fakes.deleted).toEqual(["spool/2026-12-30/x"]);
    expect(fakes.counted).toEqual([[DSN, "network_error", ["default"]]]);
    expect(expired.ack).toHaveBeenCalledOnce();
  });

  it("lets the queue try again when R2 fails it, so that the dead-letter queue gets it in the end", async () => {
    const fakes = runtime(() => new Response("{}"));
    fakes.value.bucket = { get: async () => Promise.reject(new Error("R2 down")) } as unknown as R2Bucket;
    const failing = message(stored({ body: undefined, key: "spool/k" }));
    await consume(fakes, failing);
    expect(failing.retry).toHaveBeenCalledWith({ delaySeconds: 10 });
    expect(failing.ack).not.toHaveBeenCalled();
  });
});

describe("the dead-letter queue's consumer", () => {
  it("deletes the R2 object, counts the envelope for Sentry, acknowledges it, and records it as the consumer records", async () => {
    const fakes = runtime(() => new Response("{}"));
    const dead = message(stored({ body: undefined, key: "spool/dead" }));
    const consumer = createDeadLetterConsumer({ bucket: fakes.value.bucket, reports: fakes.value.reports, record: fakes.value.record, now: () => NOW });
    await consumer({ queue: "tunnel-spool-dead", messages: [dead], retryAll() {}, ackAll() {} } as unknown as MessageBatch<unknown>);
    expect(fakes.deleted).toEqual(["spool/dead"]);
    expect(fakes.counted).toEqual([[DSN, "internal_sdk_error", ["default"]]]);
    expect(dead.ack).toHaveBeenCalledOnce();
    expect(fakes.lines).toEqual([expect.objectContaining({ outcome: "dead_lettered", age_s: 60 })]);
    expect(fakes.dataPoints).toEqual([{ blobs: ["spool", "dead_lettered", "", "1"], doubles: [0, 60_000, 0], indexes: [""] }]);
  });
});
