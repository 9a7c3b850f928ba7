import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { payloads, received } from "../support/envelopes";
import { eventually } from "../support/eventually";
import { FakeIngest } from "../support/fake-ingest";
import { stalledUpload } from "../support/http";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_DSN, APP_ROUTE } from "../support/worker";
import { startFixture, type Workerd } from "../support/workerd";

/** `wrangler.toml`'s per-client limit: a client's share of what the Worker reports, per 10 s. */
const SHARE = { limit: 60, period: 10 } as const;

/** Requests in flight at once: a client hammering, within what a loopback test should send. */
const AT_ONCE = 20;

interface ClientReport {
  discarded_events?: { reason: string; category: string; quantity: number }[];
}

/** The Worker's own envelopes at the ingest: not the tunnel's (which carry `X-Sentry-Forwarded-For`). */
const fromWorker = (ingest: FakeIngest) => received(ingest.deliveries.filter((delivery) => delivery.url.startsWith("/api/"))).filter((envelope) => !envelope.viaTunnel);

async function hammer(count: number, send: () => Promise<Response>): Promise<number[]> {
  const statuses: number[] = [];
  for (let sent = 0; sent < count; sent += AT_ONCE) {
    const batch = await Promise.all(Array.from({ length: Math.min(AT_ONCE, count - sent) }, send));
    for (const response of batch) {
      statuses.push(response.status);
      await response.body?.cancel();
    }
  }
  return statuses;
}

/** The limiter's windows are fixed, `period` long from the epoch: how many a run touched. */
const windowsTouched = (startedAt: number, endedAt: number) => Math.floor(endedAt / (SHARE.period * 1000)) - Math.floor(startedAt / (SHARE.period * 1000)) + 1;

describe("no stranger makes the Worker report more than its share (decision 017)", () => {
  describe("a bug no test foresaw: a route that throws on every request", () => {
    let ingest: FakeIngest;
    let worker: Workerd;
    beforeAll(async () => {
      ingest = await FakeIngest.start();
      worker = await startFixture("test/worker/fixtures/throwing-route.ts", {
        bindings: { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin },
        ratelimits: { TUNNEL_RATE_LIMITER: { namespace_id: "1001", simple: SHARE } },
        analyticsEngineDatasets: { TUNNEL_ANALYTICS: { dataset: "tunnel_envelopes" } },
      });
    });
    afterAll(async () => {
      await worker?.dispose();
      await ingest?.stop();
    });

    it("hammered by one client, sends at most that client's share, answers every request, and counts the rest", async () => {
      const startedAt = Date.now();
      const statuses = await hammer(200, () => worker.fetch("/anything", { headers: { "cf-connecting-ip": "203.0.113.7" } }));
      const share = SHARE.limit * windowsTouched(startedAt, Date.now());
      expect(statuses.every((status) => status === 500)).toBe(true);

      // Each request makes an error and a transaction: 400 reports asked for.
      const dropped = () => worker.logLines<{ reason: string }>("report_dropped").filter((line) => line.reason === "client_share").length;
      const reported = () => payloads(fromWorker(ingest), "event").length + payloads(fromWorker(ingest), "transaction").length;
      await eventually(() => reported() + dropped() === 400, 15_000);
      console.log(`throwing route: 200 requests, ${reported()} reports sent (share ${share}), ${dropped()} dropped`);
      expect(reported()).toBeGreaterThan(0);
      expect(reported()).toBeLessThanOrEqual(share);

      // What was dropped reaches Sentry's Stats as the app's own client report.
      const counted = () =>
        payloads<ClientReport>(fromWorker(ingest), "client_report")
          .flatMap((report) => report.discarded_events ?? [])
          .filter((discarded) => discarded.reason === "ratelimit_backoff")
          .reduce((sum, discarded) => sum + discarded.quantity, 0);
      await eventually(() => counted() === dropped(), 30_000);

      // Another client has its own share.
      const before = payloads(fromWorker(ingest), "event").length;
      expect((await worker.fetch("/anything", { headers: { "cf-connecting-ip": "198.51.100.9" } })).status).toBe(500);
      await eventually(() => payloads(fromWorker(ingest), "event").length === before + 1);
    }, 60_000);
  });

  describe("the app, with the self-test on", () => {
    const { ingest, worker } = useIngestAndWorker({ SENTRY_SELF_TEST: "on" });
    beforeEach(() => ingest.reset());

    /** Every event the Worker sent, once whatever the requests caused has had time to arrive: a page view's transaction comes after them. */
    async function workerEventsAfter(): Promise<number> {
      const marker = `/?after=${Date.now()}`;
      await worker.fetch(marker, { headers: { "cf-connecting-ip": "192.0.2.200" } });
      await eventually(() => payloads<{ request?: { url?: string } }>(fromWorker(ingest), "transaction").some((event) => event.request?.url?.includes(marker) === true), 10_000);
      return payloads(fromWorker(ingest), "event").length;
    }

    it.each([
      ["another site's Origin", { origin: "https://evil.example" }],
      ["Origin: null", { origin: "null" }],
      ["an Origin that is no URL", { origin: "not a url" }],
      ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }],
    ])("refuses a bodiless POST with %s, 403 and unreported, on every page and data request", async (_, headers) => {
      const paths = ["/", "/sentry-example-page", "/no-such-page", "/sentry-example-page?_data=routes%2Fsentry-example-page"];
      let index = 0;
      const statuses = await hammer(80, () => worker.fetch(paths[index++ % paths.length]!, { method: "POST", headers: { ...headers, "cf-connecting-ip": "203.0.113.8" } }));
      expect(new Set(statuses)).toEqual(new Set([403]));
      expect(await workerEventsAfter()).toBe(0);
    });

    it.each([
      ["a text/plain body", { "content-type": "text/plain" }, "intent=server-error", 400],
      ["a broken multipart body", { "content-type": "multipart/form-data; boundary=x" }, "--x\r\nbroken", 400],
      ["a form over 1 KiB", { "content-type": "application/x-www-form-urlencoded" }, `intent=server-error&pad=${"a".repeat(2_000)}`, 413],
    ])("answers the self-test's action %s with %#, unreported", async (_, headers, body, status) => {
      const answer = await worker.fetch("/sentry-example-page?_data=routes%2Fsentry-example-page", { method: "POST", headers, body });
      expect(answer.status).toBe(status);
      expect(await workerEventsAfter()).toBe(0);
    });

    it("answers PUT and DELETE to the self-test 405, and a declared 64 MiB form 413 before reading it, unreported", async () => {
      for (const method of ["PUT", "DELETE"]) expect((await worker.fetch("/sentry-example-page?_data=routes%2Fsentry-example-page", { method })).status, method).toBe(405);
      const huge = await stalledUpload(new URL(`${worker.origin}/sentry-example-page?_data=routes%2Fsentry-example-page`), new Uint8Array(0), {
        "content-type": "application/x-www-form-urlencoded",
        "content-length": String(64 * 1024 * 1024),
      });
      expect(huge.status).toBe(413);
      expect(await workerEventsAfter()).toBe(0);
    });

    it("answers a form that trickles past the self-test's deadline 408, within it, unreported", async () => {
      const stalled = await stalledUpload(new URL(`${worker.origin}/sentry-example-page?_data=routes%2Fsentry-example-page`), new TextEncoder().encode("intent=ser"), {
        "content-type": "application/x-www-form-urlencoded",
        "transfer-encoding": "chunked",
      });
      expect(stalled.status).toBe(408);
      expect(stalled.elapsedMs).toBeLessThan(7_000);
      expect(await workerEventsAfter()).toBe(0);
    });

    it("runs the self-test's reporting loader for this site's pages only: another site's <img> gets 403", async () => {
      const cross = await worker.fetch("/sentry-example-page/loader-error", { headers: { "sec-fetch-site": "cross-site", "sec-fetch-dest": "image" } });
      expect(cross.status).toBe(403);
      expect(await workerEventsAfter()).toBe(0);
      const own = await worker.fetch("/sentry-example-page/loader-error", { headers: { "sec-fetch-site": "same-origin", "cf-connecting-ip": "192.0.2.7" } });
      expect(own.status).toBe(500);
      await eventually(() => payloads(fromWorker(ingest), "event").length === 1);
    });

    it("still runs the self-test's own form, sent from its own page", async () => {
      const answer = await worker.fetch("/sentry-example-page?_data=routes%2Fsentry-example-page", {
        method: "POST",
        headers: { origin: worker.origin, "sec-fetch-site": "same-origin", "cf-connecting-ip": "192.0.2.8" },
        body: new URLSearchParams({ intent: "server-error" }),
      });
      expect(answer.status).toBe(500);
      await eventually(() => payloads(fromWorker(ingest), "event").length === 1);
    });

    it("forwards a Reporting API batch of some 900 CSP violations as one, which Sentry makes one event of", async () => {
      const violation = (index: number) => ({ type: "csp-violation", body: { blockedURL: `https://e.x/${index}` } });
      const batch = Array.from({ length: 900 }, (_, index) => violation(index));
      // As many as 32 KiB holds.
      while (JSON.stringify(batch).length > 32 * 1024) batch.pop();
      expect(batch.length).toBeGreaterThan(500);
      const answer = await worker.fetch(`${APP_ROUTE}/csp`, { method: "POST", headers: { "content-type": "application/reports+json" }, body: JSON.stringify(batch) });
      expect(answer.status).toBeLessThan(300);
      const security = () => ingest.deliveries.filter((delivery) => delivery.url.startsWith("/api/4502/security/"));
      await eventually(() => security().length > 0);
      expect(security()).toHaveLength(1);
      expect(JSON.parse(security()[0]!.body.toString("utf8"))).toEqual([violation(0)]);
    });

    it("tells caches that pages and their data are this visitor's alone; build files stay immutable", async () => {
      for (const path of ["/", "/sentry-example-page", "/no-such-page", "/?_data=root", "/sentry-example-page?_data=routes%2Fsentry-example-page"]) {
        expect((await worker.fetch(path)).headers.get("cache-control"), path).toBe("private, no-store");
      }
      const html = await (await worker.fetch("/")).text();
      const script = /src="(\/build\/[^"]+\.js)"/.exec(html)?.[1] ?? /href="(\/build\/[^"]+\.js)"/.exec(html)![1]!;
      expect((await worker.fetch(script)).headers.get("cache-control")).toContain("immutable");
    });
  });
});
