import { eventually } from "@edge-monitoring/tunnel/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { buildEnvelope, payloads, received } from "../support/envelopes";
import { FakeIngest } from "../support/fake-ingest";
import { stalledUpload } from "../support/http";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { getTunnelPath } from "sentry-core-11";

import { APP_DSN, APP_ROUTE, APP_TUNNEL, startWorker } from "../support/worker";
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

      // Each request makes an error and a transaction: 400 reports asked for. What was dropped
      // reaches Sentry's Stats as the app's own client report.
      const reported = () => payloads(fromWorker(ingest), "event").length + payloads(fromWorker(ingest), "transaction").length;
      const counted = () =>
        payloads<ClientReport>(fromWorker(ingest), "client_report")
          .flatMap((report) => report.discarded_events ?? [])
          .filter((discarded) => discarded.reason === "ratelimit_backoff")
          .reduce((sum, discarded) => sum + discarded.quantity, 0);
      await eventually(() => reported() + counted() === 400, 30_000);
      const windows = windowsTouched(startedAt, Date.now());
      console.log(`throwing route: 200 requests, ${reported()} reports sent (share ${share}), ${counted()} dropped`);
      expect(reported()).toBeGreaterThan(0);
      expect(reported()).toBeLessThanOrEqual(share);

      // In the log, at most one line per category and window, each standing for itself and the
      // drops it carries: the last window's are carried once a later one begins.
      const lines = worker.logLines<{ reason: string; repeats: number }>("report_dropped").filter((line) => line.reason === "client_share");
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.length).toBeLessThanOrEqual(2 * windows);
      expect(lines.reduce((sum, line) => sum + 1 + line.repeats, 0)).toBeLessThanOrEqual(counted());

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

/** What Chromium sends for a request another site's page makes it send, by the element or call that makes it. */
const BY_ANOTHER_SITE: Record<string, RequestInit & { headers: Record<string, string> }> = {
  "an <img>": { headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "image" } },
  "an <iframe>": { headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "iframe" } },
  "a no-cors fetch, a beacon or a form": {
    method: "POST",
    body: new Uint8Array(buildEnvelope().body),
    headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "empty", "content-type": "text/plain" },
  },
};

describe("another site's page cannot spend a visitor's share (decision 028)", () => {
  // wrangler.toml's own limiter: 60 per 10 s per client.
  const { ingest, worker } = useIngestAndWorker();
  beforeEach(() => ingest.reset());
  const visitor = { "cf-connecting-ip": "203.0.113.50" };
  /** Every path the tunnel answers, some spellings of them, and two pages. */
  const targets = [APP_TUNNEL, "/monitoring/security-report", APP_ROUTE, `${APP_ROUTE}/csp`, getTunnelPath(APP_DSN)!, `${getTunnelPath(APP_DSN)}/`, "/MONITORING?o=4501&p=4502&r=us", `${APP_ROUTE}/`, "/", "/sentry-example-page"];

  it("fired at every tunnel path and page well past the share, leaves the visitor's own envelope, CSP report and page view delivered", async () => {
    const startedAt = Date.now();
    let fired = 0;
    for (let round = 0; round < 3; round += 1) {
      for (const target of targets) {
        for (const init of Object.values(BY_ANOTHER_SITE)) {
          await (await worker.fetch(target, { ...init, headers: { ...init.headers, ...visitor } })).arrayBuffer();
          fired += 1;
        }
      }
    }
    expect(fired).toBeGreaterThan(SHARE.limit);

    // The visitor's own: an envelope, a CSP report, and a page view from the address bar.
    const own = { ...visitor, origin: worker.origin, "sec-fetch-site": "same-origin", "sec-fetch-mode": "cors", "sec-fetch-dest": "empty" };
    const { body } = buildEnvelope();
    expect((await worker.post(body, own, APP_ROUTE)).status).toBe(200);
    expect(ingest.deliveries.some((delivery) => delivery.body.equals(body))).toBe(true);
    const report = await worker.fetch(`${APP_ROUTE}/csp`, {
      method: "POST",
      headers: { ...own, "content-type": "application/csp-report" },
      body: JSON.stringify({ "csp-report": { "document-uri": `${worker.origin}/`, "blocked-uri": "https://evil.example/x.js" } }),
    });
    expect(report.status).toBeLessThan(300);
    await eventually(() => ingest.deliveries.some((delivery) => delivery.url.startsWith("/api/4502/security/")));
    const marker = `/?own=${Date.now()}`;
    await worker.fetch(marker, { headers: { ...visitor, "sec-fetch-site": "none", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" } });
    const pageViews = () => payloads<{ request?: { url?: string } }>(fromWorker(ingest), "transaction").map((event) => event.request?.url ?? "");
    await eventually(() => pageViews().some((url) => url.includes(marker)), 10_000);
    // Nothing another site's page loaded was reported on the visitor's account.
    expect(pageViews().filter((url) => !url.includes(marker))).toEqual([]);

    // A bounded record: one tunnel line per reason and window for this client, however many it was
    // sent. The windows are those until now: what a window held is written in a later one, with
    // the isolate's next request (seen on a loaded machine, where the waits above spanned more).
    // A kind of line is what the tunnel tells lines apart by: what was posted, the reason and the
    // status (an envelope's `rate_limited` and a CSP report's are two).
    const windows = windowsTouched(startedAt, Date.now());
    const lines = worker.logLines<{ kind: string; reason: string; status: number }>("tunnel");
    const kinds = new Set(lines.map((line) => `${line.kind} ${line.reason} ${line.status}`));
    expect(lines.length, JSON.stringify(lines)).toBeLessThanOrEqual(kinds.size * windows + 2);
  });

  it("writes a bounded number of lines for 300 refusals from one client: one per reason and window", async () => {
    // A Worker of its own: the one above would write, in a later window, what the other clients'
    // refusals held before this test began, among this client's lines.
    const alone = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin });
    try {
      const startedAt = Date.now();
      const stranger = { "cf-connecting-ip": "203.0.113.51" };
      const statuses = await hammer(300, () => alone.fetch(APP_ROUTE, { headers: stranger }));
      expect(new Set(statuses)).toEqual(new Set([405]));
      const windows = windowsTouched(startedAt, Date.now());
      await eventually(() => alone.logLines("tunnel").length > 0);
      const lines = alone.logLines<{ reason: string; repeats: number }>("tunnel");
      console.log(`300 refusals from one client over ${windows} window(s): ${lines.length} line(s)`);
      expect(lines.length).toBeLessThanOrEqual(windows);
      expect(lines.every((line) => line.reason === "method_not_allowed")).toBe(true);
    } finally {
      await alone.dispose();
    }
  });
});

describe("a Worker whose configuration leaves a limit out", () => {
  it.each(["TUNNEL_RATE_LIMITER", "TUNNEL_SPOOL_CLIENT_BUDGET"])("does not start without %s, and names it", async (binding) => {
    const refusal = await startWorker({ SENTRY_DSN: APP_DSN }, { without: [binding] }).then(
      async (started) => {
        await started.dispose();
        return "it started";
      },
      (error: Error) => error.message,
    );
    expect(refusal).toContain(`${binding} is not bound`);
    expect(refusal).toContain("TUNNEL_RATE_LIMITING=off");
  });

  it("starts with no limit when the operator says so, and says so when it starts", async () => {
    const unlimited = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_RATE_LIMITING: "off" }, { without: ["TUNNEL_RATE_LIMITER", "TUNNEL_SPOOL_CLIENT_BUDGET", "TUNNEL_SPOOL_TOTAL_BUDGET"] });
    try {
      const start = unlimited.logs.find((line) => line.startsWith('{"event":"tunnel_start"'));
      expect(JSON.parse(start!)).toMatchObject({ rate_limiter: "off: said on purpose, so no client is held to a share" });
    } finally {
      await unlimited.dispose();
    }
  });
});
