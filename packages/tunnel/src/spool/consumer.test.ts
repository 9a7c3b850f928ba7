import { describe, expect, it, vi } from "vitest";

import { StubSentry } from "../testing/harness.ts";
import { compileAllowList } from "../upstream/allow-list.ts";
import type { ClientReports } from "../upstream/client-reports.ts";
import { parseDsn } from "../upstream/dsn.ts";
import { UpstreamBreaker } from "../upstream/breaker.ts";
import { SentryLimits } from "../upstream/sentry-limits.ts";
import { createSpoolConsumer } from "./consumer.ts";
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

const settings = { timeoutMs: 1_000, maxEnvelopeBytes: 1_000_000, spoolRetrySeconds: 10, ownProject: undefined };

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

  it("lets the queue try again when R2 fails it, so that the dead-letter queue gets it in the end", async () => {
    const fakes = runtime(() => new Response("{}"));
    fakes.value.bucket = { get: async () => Promise.reject(new Error("R2 down")) } as unknown as R2Bucket;
    const failing = message(stored({ body: undefined, key: "spool/k" }));
    await consume(fakes, failing);
    expect(failing.retry).toHaveBeenCalledWith({ delaySeconds: 10 });
    expect(failing.ack).not.toHaveBeenCalled();
  });
});

