import { describe, expect, it } from "vitest";

import { spoolHeartbeat } from "./heartbeat.ts";

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const now = () => NOW;
const queueHolding = (metrics: QueueMetrics) => ({ metrics: async () => metrics });

describe("the spool's heartbeat", () => {
  it("is ok with an empty queue, and says its depth", async () => {
    expect(await spoolHeartbeat(queueHolding({ backlogCount: 0, backlogBytes: 0 }), 3600, now)).toEqual({
      event: "tunnel_spool_heartbeat",
      status: "ok",
      backlog_count: 0,
      backlog_bytes: 0,
      oldest_age_s: null,
      max_age_s: 3600,
    });
  });

  it("is ok while the oldest envelope is within the age, stale once it has waited past it", async () => {
    const waited = (seconds: number) => queueHolding({ backlogCount: 12, backlogBytes: 120_000, oldestMessageTimestamp: new Date(NOW - seconds * 1000) });
    expect(await spoolHeartbeat(waited(3600), 3600, now)).toMatchObject({ status: "ok", backlog_count: 12, backlog_bytes: 120_000, oldest_age_s: 3600 });
    expect(await spoolHeartbeat(waited(3601), 3600, now)).toMatchObject({ status: "stale", oldest_age_s: 3601 });
  });

  it("says it could not read the depth, rather than ok, when the queue's count fails or the runtime has none", async () => {
    const failing = { metrics: async (): Promise<QueueMetrics> => Promise.reject(new Error("queue unavailable")) };
    for (const queue of [failing, {}]) {
      expect(await spoolHeartbeat(queue, 3600, now)).toMatchObject({ status: "unread", backlog_count: null, oldest_age_s: null });
    }
  });
});
