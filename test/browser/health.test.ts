import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { eventually } from "@edge-monitoring/tunnel/testing";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { CapturedDataPoint } from "../worker/fixtures/analytics-capture";
import { AnalyticsSqlStandIn } from "../support/analytics-sql";
import { launchChromium } from "../support/chromium";
import { buildEnvelope } from "../support/envelopes";
import { answerOk, FakeIngest } from "../support/fake-ingest";
import { runProjectScript } from "../support/npm-script";
import { APP_DSN, APP_ROUTE, startWorker, type RunningWorker, FOREIGN_DSN } from "../support/worker";
import { root } from "../support/workerd";


const health = (args: string[], env: Record<string, string | undefined>) => runProjectScript("health", args, env);

const ofKind = (points: readonly CapturedDataPoint[], outcome: string, reason?: string) =>
  points.filter((point) => point.blobs?.[0] === outcome && (reason === undefined || point.blobs?.[1] === reason)).length;

describe("npm run health: the tunnel's last hour at a glance, from its data points (issue 47)", () => {
  let ingest: FakeIngest;
  let worker: RunningWorker;
  let sql: AnalyticsSqlStandIn;
  let browser: Browser;
  let points: CapturedDataPoint[];
  const scratch = mkdtempSync(join(tmpdir(), "tunnel-health-"));
  const credentials = () => ({ CLOUDFLARE_ACCOUNT_ID: sql.accountId, CLOUDFLARE_API_TOKEN: sql.token, CLOUDFLARE_API_BASE_URL: sql.baseUrl });

  beforeAll(async () => {
    ingest = await FakeIngest.start();
    worker = await startWorker(
      { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin, TUNNEL_SPOOL_RETRY_SECONDS: "1" },
      { rateLimit: { limit: 1_000_000, period: 10 }, captureDataPoints: true },
    );
    // Five delivered; four refused, for three reasons.
    for (let sent = 0; sent < 5; sent += 1) expect((await worker.post(buildEnvelope().body, {}, APP_ROUTE)).status).toBe(200);
    for (let sent = 0; sent < 2; sent += 1) expect((await worker.post(buildEnvelope({ dsn: FOREIGN_DSN }).body, {}, APP_ROUTE)).status).toBe(403);
    expect((await worker.post(buildEnvelope().body, {}, `${APP_ROUTE}?o=4501`)).status).toBe(400);
    expect((await worker.post(buildEnvelope().body, { origin: "https://elsewhere.example" }, APP_ROUTE)).status).toBe(403);
    // An outage: three stored, then delivered by the spool once Sentry is back.
    ingest.respondWith((request, response, body) => {
      if (body.includes('"type":"check_in"')) return answerOk(request, response, body);
      response.writeHead(503, { "content-type": "text/plain" });
      response.end("busy");
    });
    for (let sent = 0; sent < 3; sent += 1) expect((await worker.post(buildEnvelope().body, {}, APP_ROUTE)).status).toBe(202);
    await worker.scheduled("*/5 * * * *");
    ingest.respondWith(answerOk);
    // Each envelope's point comes before its batch's, which says what the queue held when the batch
    // ran: the heartbeat below is to read the queue after every batch has, and be the last word on it.
    const deliveredInBatches = () => worker.dataPoints().filter((point) => point.blobs?.[0] === "spool_batch").reduce((sum, point) => sum + Number(point.doubles?.[6]), 0);
    await eventually(() => ofKind(worker.dataPoints(), "spool", "delivered") === 3 && deliveredInBatches() === 3, 30_000, {
      saw: () => worker.dataPoints().map((point) => point.blobs?.slice(0, 2).join(" ")),
    });
    await worker.scheduled("*/5 * * * *");
    await eventually(() => ofKind(worker.dataPoints(), "spool_heartbeat") === 2);
    points = worker.dataPoints();
    sql = await AnalyticsSqlStandIn.start();
    sql.insert(points);
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await sql?.stop();
    await worker?.dispose();
    await ingest?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("shows each outcome, refusal, loss and the spool in the terminal, from the queries in docs/queries/", async () => {
    const { code, stdout } = await health([], credentials());
    expect(code).toBe(0);
    expect(stdout).toContain("Envelopes: 5 forwarded · 3 spooled · 4 rejected · 0 failed");
    // A refusal before the query or the DSN was read is of no project.
    expect(stdout).toContain("by project: 4502 8");
    expect(stdout).toMatch(/Refused: 4, by reason:\n\s+dsn_not_allowed\s+2\n\s+invalid_query\s+1\n\s+origin_not_allowed\s+1\n/);
    expect(stdout).toMatch(/Lost: 0, by reason:\n\s+none\n/);
    // The deepest backlog and the oldest envelope the heartbeat and the batches read: 3 and 0 s on a
    // quiet machine; on a busy one the consumer can hold a batch before the heartbeat reads the
    // queue, and a batch can wait past a second. The last read, after every batch, finds it empty.
    const spoolReads = points.filter((point) => ["spool_batch", "spool_heartbeat"].includes(String(point.blobs?.[0])));
    const deepest = Math.max(...spoolReads.map((point) => Number(point.doubles?.[3])));
    const oldest = Math.max(...spoolReads.map((point) => Number(point.doubles?.[5])));
    expect(deepest).toBeGreaterThan(0);
    expect(stdout).toContain(`Spool: backlog 0 at last read (peak ${deepest}), oldest envelope peak ${oldest} s, 3 delivered from it`);
    expect(stdout).toContain("statuses: 200 ×8 · 503 ×3");
  });

  it("writes the same as a self-contained page, whose figures and charts Chromium renders", async () => {
    const file = join(scratch, "health.html");
    const { code, stderr } = await health(["--html", file], credentials());
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    const page = await browser.newPage({ viewport: { width: 960, height: 1400 } });
    try {
      // Nothing is fetched: the page stands alone.
      const requests: string[] = [];
      page.on("request", (request) => requests.push(request.url()));
      await page.goto(pathToFileURL(file).href);
      const figure = (name: string) => page.locator(`[data-figure="${name}"]`).innerText();
      expect(await figure("forwarded")).toBe("5");
      expect(await figure("spooled")).toBe("3");
      expect(await figure("rejected")).toBe("4");
      expect(await figure("refused")).toBe("4");
      expect(await figure("lost")).toBe("0");
      expect(await figure("spool-delivered")).toBe("3");
      const forwardedMs = points.filter((point) => point.blobs?.[0] === "forwarded").map((point) => point.doubles![1]!);
      expect(await figure("sentry-p95")).toBe(`${Math.max(...forwardedMs)} ms`);
      expect(await page.locator("#refusals tr").allInnerTexts()).toEqual(["reason\trequests", "dsn_not_allowed\t2", "invalid_query\t1", "origin_not_allowed\t1"]);
      expect(await page.locator("#statuses tr").allInnerTexts()).toEqual(["status\tenvelopes", "200\t8", "503\t3"]);
      // Three charts, drawn: the envelopes' bars, the spool's line, Sentry's two lines.
      expect(await page.locator("svg").evaluateAll((svgs) => svgs.filter((svg) => svg.querySelector("rect, path")).length)).toBeGreaterThanOrEqual(3);
      expect(requests).toEqual([pathToFileURL(file).href]);
      await page.screenshot({ path: join(root, ".cache/health.png"), fullPage: true });
    } finally {
      await page.close();
    }
  });

  it("weighs each row by _sample_interval, as Analytics Engine's sampled rows stand for several", async () => {
    const sampled = await AnalyticsSqlStandIn.start();
    try {
      sampled.insert(points, "tunnel_envelopes", 10);
      const { stdout } = await health([], { CLOUDFLARE_ACCOUNT_ID: sampled.accountId, CLOUDFLARE_API_TOKEN: sampled.token, CLOUDFLARE_API_BASE_URL: sampled.baseUrl });
      expect(stdout).toContain("Envelopes: 50 forwarded · 30 spooled · 40 rejected · 0 failed");
      expect(stdout).toMatch(/Refused: 40, by reason:\n\s+dsn_not_allowed\s+20\n/);
      expect(stdout).toContain("30 delivered from it");
      expect(stdout).toContain("statuses: 200 ×80 · 503 ×30");
    } finally {
      await sampled.stop();
    }
  });

  it("says in one line what to set when the credentials are missing, and exits non-zero", async () => {
    const { code, stdout, stderr } = await health([], { CLOUDFLARE_ACCOUNT_ID: sql.accountId });
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trim().split("\n")).toEqual([expect.stringContaining("npm run health needs CLOUDFLARE_API_TOKEN")]);
    expect(stderr).toContain("Account Analytics > Read");
  });

  it("says there is no data when the dataset holds none, and in one line that a token or an answer is refused", async () => {
    const empty = await AnalyticsSqlStandIn.start();
    try {
      const none = await health([], { CLOUDFLARE_ACCOUNT_ID: empty.accountId, CLOUDFLARE_API_TOKEN: empty.token, CLOUDFLARE_API_BASE_URL: empty.baseUrl });
      expect(none).toMatchObject({ code: 0, stdout: expect.stringContaining("No data points in tunnel_envelopes for the last hour") });
      const refused = await health(["--day"], { CLOUDFLARE_ACCOUNT_ID: empty.accountId, CLOUDFLARE_API_TOKEN: "wrong", CLOUDFLARE_API_BASE_URL: empty.baseUrl });
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split("\n")).toEqual([expect.stringContaining("Cloudflare's SQL API answered 401")]);
    } finally {
      await empty.stop();
    }
    // A proxy's page where the API should be: said in one line, as what came.
    const proxy = createServer((_request, response) => response.writeHead(200, { "content-type": "text/html" }).end("<html><body>Captive portal</body></html>"));
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/client/v4`;
      const page = await health([], { CLOUDFLARE_ACCOUNT_ID: "a", CLOUDFLARE_API_TOKEN: "t", CLOUDFLARE_API_BASE_URL: base });
      expect(page.code).toBe(1);
      expect(page.stderr.trim().split("\n")).toEqual([expect.stringContaining("answered without data: <html><body>Captive portal")]);
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
