import { eventually } from "@edge-monitoring/tunnel/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { FakeIngest } from "../support/fake-ingest";
import { ModelQueue } from "../support/queue-model";
import { startFixture, type Workerd } from "../support/workerd";

/** One delivery as a consumer saw it. */
interface Seen {
  queue: string;
  name: string;
  attempts: number;
  at: number;
}

/** The script both queues run: a message sent with a delay, one retried once, one retried until the queue gives it up. */
const SCRIPT = [
  { name: "delayed", delay: 2, retries: 0, retryDelay: 0 },
  { name: "retried", delay: 0, retries: 1, retryDelay: 2 },
  { name: "exhausted", delay: 0, retries: 99, retryDelay: 0 },
];
const MAX_RETRIES = 2;

/** What a script's run comes to, apart from when: each message's deliveries, by queue, in order. */
function deliveriesOf(seen: readonly Seen[]): Record<string, string[]> {
  const byName: Record<string, string[]> = {};
  for (const { queue, name, attempts } of seen) (byName[name] ??= []).push(`${queue}#${attempts}`);
  return byName;
}

/** How long after the first delivery of `name` its second came (or after sending, with `from`). */
const gap = (seen: readonly Seen[], name: string, from?: number) => {
  const times = seen.filter((delivery) => delivery.name === name).map((delivery) => delivery.at);
  return from === undefined ? times[1]! - times[0]! : times[0]! - from;
};

/**
 * The spool simulation (`npm run bench:spool`) runs the tunnel against a model of a Cloudflare
 * Queue (`test/support/queue-model.ts`). Here the model and Miniflare's own queue run one script,
 * so that the model does not drift from the platform as Miniflare implements it: delays, retries,
 * attempts, the dead-letter queue after `max_retries`, and the backlog a send reports.
 */
describe("the spool simulation's queue model, held to Miniflare's queue", () => {
  let reports: FakeIngest;
  let worker: Workerd;
  beforeAll(async () => {
    reports = await FakeIngest.start();
    worker = await startFixture("test/worker/fixtures/queue-probe.ts", {
      bindings: { REPORT_URL: `${reports.origin}/report` },
      queueProducers: { QUEUE: { queueName: "probe" } },
      queueConsumers: {
        probe: { maxBatchSize: 10, maxBatchTimeout: 1, maxRetries: MAX_RETRIES, deadLetterQueue: "probe-dead" },
        "probe-dead": { maxBatchSize: 10, maxBatchTimeout: 1 },
      },
    });
  });
  afterAll(async () => {
    await worker?.dispose();
    await reports?.stop();
  });

  it("delays, retries and dead-letters as the model does", { timeout: 60_000 }, async () => {
    const sentAt = Date.now();
    for (const { name, delay, retries, retryDelay } of SCRIPT) await (await worker.fetch(`/send?name=${name}&delay=${delay}&retries=${retries}&retryDelay=${retryDelay}`)).arrayBuffer();
    const platform = () => reports.deliveries.map((delivery) => JSON.parse(delivery.body.toString("utf8")) as Seen);
    await eventually(() => platform().filter((seen) => seen.name === "retried").length === 2 && platform().some((seen) => seen.queue === "probe-dead"), 45_000, { pollMs: 100 });

    // The same script on the model, on a virtual clock run in steps of 100 ms.
    let now = 0;
    const model = new ModelQueue({ now: () => now }, 1, MAX_RETRIES);
    for (const { name, delay, retries, retryDelay } of SCRIPT) await model.send({ name, retries, retryDelaySeconds: retryDelay }, { delaySeconds: delay });
    const modelled: Seen[] = [];
    for (; now < 30_000; now += 100) {
      for (let next = model.nextBatch("probe", 10); next; next = model.nextBatch("probe", 10)) {
        for (const message of next.batch.messages) {
          const body = message.body as { name: string; retries: number; retryDelaySeconds: number };
          modelled.push({ queue: "probe", name: body.name, attempts: message.attempts, at: now });
          if (message.attempts <= body.retries) message.retry({ delaySeconds: body.retryDelaySeconds });
          else message.ack();
        }
        next.settle(false);
      }
    }

    // Miniflare delivers a message max_retries + 1 times, then hands it to the dead-letter queue.
    const exhausted = [...Array.from({ length: MAX_RETRIES + 1 }, (_, index) => `probe#${index + 1}`), "probe-dead#1"];
    expect(deliveriesOf(platform())).toEqual({ delayed: ["probe#1"], retried: ["probe#1", "probe#2"], exhausted });
    // The model counts the dead letter instead of delivering it.
    expect(deliveriesOf(modelled)).toEqual({ delayed: ["probe#1"], retried: ["probe#1", "probe#2"], exhausted: exhausted.slice(0, -1) });
    expect(model.counts.deadLettered).toBe(1);
    // Neither delivers a delayed or retried message before its delay.
    expect(gap(platform(), "delayed", sentAt)).toBeGreaterThanOrEqual(2_000);
    expect(gap(platform(), "retried")).toBeGreaterThanOrEqual(2_000);
    expect(gap(modelled, "delayed", 0)).toBeGreaterThanOrEqual(2_000);
    expect(gap(modelled, "retried")).toBeGreaterThanOrEqual(2_000);
  });

  it("reports a backlog from send(): Miniflare's counts a delayed message once it is due, the model's from when it is written", async () => {
    const answer = (await (await worker.fetch("/send?name=later&delay=600")).json()) as { metrics: QueueMetrics | null; queueMetrics: QueueMetrics };
    const model = new ModelQueue({ now: () => 0 }, 1, MAX_RETRIES);
    const modelled = (await model.send({ name: "later", retries: 0, retryDelaySeconds: 0 }, { delaySeconds: 600 })).metadata.metrics;
    // The model's is the larger, so its peak backlog is never below the platform's.
    expect(modelled.backlogCount).toBe(1);
    expect(modelled.backlogBytes).toBeGreaterThan(0);
    expect(answer.queueMetrics.backlogCount).toBeLessThanOrEqual(modelled.backlogCount);
  });
});
