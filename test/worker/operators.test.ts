import { eventually } from "@edge-monitoring/tunnel/testing";
import { describe, expect, it } from "vitest";

import { SPOOL_MONITOR_SLUG } from "../../worker/operator-monitors";
import { buildEnvelope, payloads, received } from "../support/envelopes";
import { answerOk } from "../support/fake-ingest";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_ROUTE } from "../support/worker";

/** The Cron Trigger of `wrangler.toml`. */
const CRON = "*/5 * * * *";

interface CheckIn {
  monitor_slug: string;
  status: string;
  environment?: string;
  monitor_config?: { schedule: { type: string; value: string }; checkin_margin?: number; failure_issue_threshold?: number };
}

describe("the spool's heartbeat: a Cron Trigger that checks in to Sentry (issue 47)", () => {
  const { ingest, worker } = useIngestAndWorker(
    { TUNNEL_SPOOL_RETRY_SECONDS: "1", TUNNEL_SPOOL_MAX_AGE_SECONDS: "2" },
    { rateLimit: { limit: 1_000_000, period: 10 }, captureDataPoints: true },
  );
  const checkIns = () => payloads<CheckIn>(received(ingest.deliveries), "check_in");

  it("checks in ok with the queue's depth while nothing waits, creating the monitor for the trigger's schedule", async () => {
    await worker.scheduled(CRON);
    await eventually(() => checkIns().length === 1);
    expect(checkIns()[0]).toMatchObject({
      monitor_slug: SPOOL_MONITOR_SLUG,
      status: "ok",
      environment: "production",
      monitor_config: { schedule: { type: "crontab", value: CRON }, checkin_margin: 5, failure_issue_threshold: 1 },
    });
    expect(worker.logLines("tunnel_spool_heartbeat").at(-1)).toMatchObject({ status: "ok", backlog_count: 0, oldest_age_s: null, max_age_s: 2 });
    const points = worker.dataPoints();
    expect(points.filter((point) => point.blobs?.[0] === "spool_heartbeat").at(-1)).toMatchObject({ blobs: ["spool_heartbeat", "ok", "", "1"], doubles: [0, 0, 0, 0, 0, -1] });
  });

  it("checks in error once a stored envelope has waited past TUNNEL_SPOOL_MAX_AGE_SECONDS, and ok again once it is delivered", async () => {
    // Sentry refuses the tunnel's envelopes; the Worker's own check-ins still reach it.
    const isCheckIn = (body: Buffer) => body.includes('"type":"check_in"');
    ingest.respondWith((request, response, body) => {
      if (isCheckIn(body)) return answerOk(request, response, body);
      response.writeHead(503, { "content-type": "text/plain" });
      response.end("busy");
    });
    const { body } = buildEnvelope();
    expect((await worker.post(body, {}, APP_ROUTE)).status).toBe(202);
    await eventually(
      async () => {
        await worker.scheduled(CRON);
        return checkIns().some((checkIn) => checkIn.status === "error");
      },
      20_000,
      { pollMs: 500, saw: () => worker.logLines("tunnel_spool_heartbeat").slice(-3) },
    );
    expect(worker.logLines<{ status: string; backlog_count: number; oldest_age_s: number }>("tunnel_spool_heartbeat").at(-1)).toMatchObject({ status: "stale", backlog_count: 1 });

    ingest.respondWith(answerOk);
    const checkedIn = checkIns().length;
    await eventually(
      async () => {
        await worker.scheduled(CRON);
        return checkIns().slice(checkedIn).some((checkIn) => checkIn.status === "ok");
      },
      30_000,
      { pollMs: 500, saw: () => worker.logLines("tunnel_spool_heartbeat").slice(-3) },
    );
    expect(ingest.deliveries.some((delivery) => delivery.body.equals(body))).toBe(true);
  });
});
