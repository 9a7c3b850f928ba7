import { eventually } from "@edge-monitoring/tunnel/testing";
import { beforeEach, describe, expect, it } from "vitest";

import { RELEASE } from "../../app/release.generated";
import { buildEnvelope, payloads, received } from "../support/envelopes";
import { FakeIngest } from "../support/fake-ingest";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { APP_ROUTE, APP_TUNNEL } from "../support/worker";

/**
 * What a stranger can make the Worker do outside the tunnel, tried against the defaults that
 * production runs: every test here failed before the pages were made production-safe.
 */

const TRACE_ID = "0123456789abcdef0123456789abcdef";
/** Where the pages' CSP reports go: beside the app's route. */
const REPORT_PATH = `${APP_ROUTE}/csp`;
const PERIOD_MS = 10_000;

interface SentryEvent {
  environment?: string;
  release?: string;
  contexts?: { trace?: { trace_id?: string } };
}

/** A CSP violation as Chromium's `report-uri` sends it. */
const cspReport = (blocked = "https://evil.example/x.js") =>
  JSON.stringify({
    "csp-report": {
      "document-uri": "https://app.example/",
      "violated-directive": "script-src-elem",
      "effective-directive": "script-src-elem",
      "blocked-uri": blocked,
      disposition: "enforce",
      "status-code": 200,
    },
  });

/** Waits until at least `needMs` remain in the rate limiter's current window (windows are aligned to the period). */
async function freshWindow(needMs: number): Promise<void> {
  await eventually(() => PERIOD_MS - (Date.now() % PERIOD_MS) > needMs, PERIOD_MS, { pollMs: 50 });
}

function ownEvents(ingest: FakeIngest) {
  return received(ingest.deliveries.filter((delivery) => delivery.url.includes("/envelope/"))).filter((envelope) => !envelope.viaTunnel);
}

describe("production defaults", () => {
  const { ingest, worker } = useIngestAndWorker({ SENTRY_ENVIRONMENT: "production" });

  it("keeps the self-test off: its pages answer 404, its action reports nothing, and the start-up line says how to turn it on", async () => {
    const pressed = await worker.fetch("/sentry-example-page", { method: "POST", body: new URLSearchParams({ intent: "server-error" }) });
    expect(pressed.status).toBe(404);
    expect(await pressed.text()).toContain("Page not found");
    expect((await worker.fetch("/sentry-example-page")).status).toBe(404);
    expect((await worker.fetch("/sentry-example-page/loader-error")).status).toBe(404);
    const home = await (await worker.fetch("/")).text();
    expect(home).not.toContain('href="/sentry-example-page"');

    // The home page's transaction is sent after the requests above: once it is in, theirs would be.
    await eventually(() => payloads<{ transaction?: string }>(ownEvents(ingest), "transaction").some((event) => event.transaction === "GET /"));
    await ingest.settled();
    expect(payloads(ownEvents(ingest), "event")).toEqual([]);
    const start = worker.logs.find((line) => line.startsWith('{"event":"tunnel_start"'));
    expect(JSON.parse(start!)).toMatchObject({ self_test: expect.stringContaining("SENTRY_SELF_TEST=on") });
  });

  it("shows no spool counts to the public, neither in the page nor in its data", async () => {
    const html = await (await worker.fetch("/")).text();
    expect(html).toContain('id="monitoring-title"');
    expect(html).not.toContain('data-testid="spool-status"');
    const data = await (await worker.fetch("/?_data=routes/_index")).json();
    expect(data).toEqual({ spoolCounts: "hidden" });
  });

  it("sends every HTML answer with a nonced Content-Security-Policy and the framing, sniffing and referrer headers", async () => {
    const nonces: string[] = [];
    for (const [path, status] of [["/", 200], ["/", 200], ["/no/such/page", 404]] as const) {
      const response = await worker.fetch(path);
      const html = await response.text();
      expect(response.status, path).toBe(status);
      const policy = response.headers.get("content-security-policy") ?? "";
      const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(policy)?.[1];
      expect(nonce, path).toBeDefined();
      nonces.push(nonce!);
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).toContain(`report-uri ${worker.origin}${REPORT_PATH}`);
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBe("strict-origin-when-cross-origin");
      expect(response.headers.get("permissions-policy")).toContain("camera=()");
      const scripts = html.match(/<script\b[^>]*>/g) ?? [];
      expect(scripts.length, path).toBeGreaterThanOrEqual(3);
      for (const script of scripts) expect(script, path).toContain(`nonce="${nonce}"`);
    }
    expect(new Set(nonces).size).toBe(3);
  });
});

describe("the self-test, turned on in production", () => {
  const { ingest, worker } = useIngestAndWorker({ SENTRY_ENVIRONMENT: "production", SENTRY_SELF_TEST: "on" }, { rateLimit: { limit: 5, period: PERIOD_MS / 1000 } });
  beforeEach(() => ingest.reset());

  it("reports on request within the tunnel's per-client limit, and nothing past it", async () => {
    await freshWindow(5_000);
    const client = { "cf-connecting-ip": "203.0.113.10" };
    const statuses: number[] = [];
    for (let press = 0; press < 8; press += 1) {
      const response = await worker.fetch("/sentry-example-page", { method: "POST", body: new URLSearchParams({ intent: "server-error" }), headers: client });
      statuses.push(response.status);
      if (response.status === 429) expect(response.headers.get("retry-after")).toBe("10");
      await response.arrayBuffer();
    }
    const loader = await worker.fetch("/sentry-example-page/loader-error", { headers: client });
    // The same count as the tunnel's: the client's envelopes are refused too.
    const envelope = await worker.fetch(APP_TUNNEL, { method: "POST", body: new Uint8Array(buildEnvelope().body), headers: client });
    // Each press asks once itself, for its 429 page, and its error and transaction once each
    // (decision 017): the second press's transaction is past the share of 5, and dropped.
    expect(statuses).toEqual([500, 500, 429, 429, 429, 429, 429, 429]);
    expect(loader.status).toBe(429);
    expect(envelope.status).toBe(429);

    // Another client still has its share.
    expect((await worker.fetch("/sentry-example-page/loader-error", { headers: { "cf-connecting-ip": "203.0.113.11" } })).status).toBe(500);
    await eventually(() => payloads(ownEvents(ingest), "event").length === 3);
    await ingest.settled();
    expect(payloads(ownEvents(ingest), "event")).toHaveLength(3);
    expect(payloads(ownEvents(ingest), "event").length + payloads(ownEvents(ingest), "transaction").length).toBeLessThanOrEqual(5 + 2);
  });

  it("sends the 500 page with the same headers as every other page", async () => {
    const response = await worker.fetch("/sentry-example-page/loader-error", { headers: { "cf-connecting-ip": "203.0.113.12" } });
    expect(response.status).toBe(500);
    expect(response.headers.get("content-security-policy")).toMatch(/script-src 'self' 'nonce-[^']+'/);
    expect(response.headers.get("x-frame-options")).toBe("DENY");
  });
});

/** A client's trace headers, forging the decision, the environment and the release. */
function forged(sampleRand: string): Record<string, string> {
  return {
    "sentry-trace": `${TRACE_ID}-0123456789abcdef-1`,
    baggage: `sentry-trace_id=${TRACE_ID},sentry-sample_rand=${sampleRand},sentry-sample_rate=1,sentry-sampled=true,sentry-environment=evil,sentry-release=evil`,
    "cf-connecting-ip": "203.0.113.20",
  };
}

describe("sampling stays the operator's: at rate 0", () => {
  const { ingest, worker } = useIngestAndWorker({ SENTRY_SELF_TEST: "on", SENTRY_TRACES_SAMPLE_RATE: "0" });

  it("at rate 0, a forged trace makes the Worker send no transaction", async () => {
    for (let view = 0; view < 20; view += 1) await (await worker.fetch("/", { headers: forged("0") })).arrayBuffer();
    // An error sent after the page views: once it is in and nothing is arriving, their transactions would be too.
    await worker.fetch("/sentry-example-page/loader-error");
    await eventually(() => payloads(ownEvents(ingest), "event").length === 1);
    await ingest.settled();
    expect(payloads(ownEvents(ingest), "transaction")).toEqual([]);
  });
});

describe("sampling stays the operator's: under a low rate", () => {
  const { ingest, worker } = useIngestAndWorker(
    { SENTRY_ENVIRONMENT: "production", SENTRY_TRACES_SAMPLE_RATE: "0.000001" },
    { rateLimit: { limit: 5, period: PERIOD_MS / 1000 } },
  );

  it("under a low rate, a forged sample_rand forces no more than the client's share, and its environment and release never reach Sentry", async () => {
    await freshWindow(5_000);
    for (let view = 0; view < 20; view += 1) await (await worker.fetch("/", { headers: forged("0") })).arrayBuffer();
    await eventually(() => payloads(ownEvents(ingest), "transaction").length >= 5);
    await ingest.settled();
    const envelopes = ownEvents(ingest).filter(({ envelope }) => envelope.items.some((item) => item.header.type === "transaction"));
    expect(envelopes).toHaveLength(5);
    for (const { envelope } of envelopes) {
      // The trace is continued, described by the Worker itself.
      expect(envelope.header.trace).toMatchObject({ trace_id: TRACE_ID, environment: "production", release: RELEASE, sample_rate: "0.000001" });
      const [transaction] = payloads<SentryEvent>([{ viaTunnel: false, envelope, bytes: 0 }], "transaction");
      expect(transaction).toMatchObject({ environment: "production", release: RELEASE, contexts: { trace: { trace_id: TRACE_ID } } });
    }
    // A client that names a sample_rand above the rate is not sampled, and costs nothing.
    ingest.reset();
    for (let view = 0; view < 5; view += 1) await (await worker.fetch("/", { headers: forged("0.5") })).arrayBuffer();
    await ingest.settled();
    expect(payloads(ownEvents(ingest), "transaction")).toEqual([]);
  });
});

describe("CSP reports through the tunnel", () => {
  const { ingest, worker } = useIngestAndWorker({ SENTRY_ENVIRONMENT: "production" }, { rateLimit: { limit: 5, period: PERIOD_MS / 1000 } });
  beforeEach(() => ingest.reset());

  const report = (body: string, headers: Record<string, string> = {}) =>
    worker.fetch(REPORT_PATH, { method: "POST", body, headers: { "content-type": "application/csp-report", ...headers } });

  it("forwards a violation, as sent, to the app's own project's security endpoint, with the Worker's environment and release and no cookie", async () => {
    const body = cspReport();
    const response = await report(body, { cookie: "sid=secret-session", authorization: "Bearer secret-token", "cf-connecting-ip": "203.0.113.30", "user-agent": "Chromium-test" });
    expect(response.status).toBe(200);
    expect(ingest.deliveries).toHaveLength(1);
    const [delivery] = ingest.deliveries;
    const url = new URL(delivery!.url, ingest.origin);
    expect(url.pathname).toBe("/api/4502/security/");
    expect(Object.fromEntries(url.searchParams)).toEqual({ sentry_key: "0123456789abcdef0123456789abcdef", sentry_environment: "production", sentry_release: RELEASE });
    expect(delivery!.body.toString("utf8")).toBe(body);
    expect(delivery!.headers).toMatchObject({ "content-type": "application/csp-report", "user-agent": "Chromium-test", "x-sentry-forwarded-for": "203.0.113.30" });
    expect(delivery!.headers.cookie).toBeUndefined();
    expect(delivery!.headers.authorization).toBeUndefined();
  });

  it("forwards the Reporting API's batch too", async () => {
    const batch = JSON.stringify([{ type: "csp-violation", age: 10, url: "https://app.example/", body: { blockedURL: "inline", effectiveDirective: "script-src-elem" } }]);
    const response = await report(batch, { "content-type": "application/reports+json", "cf-connecting-ip": "203.0.113.31" });
    expect(response.status).toBe(200);
    expect(ingest.deliveries.map((delivery) => delivery.body.toString("utf8"))).toEqual([batch]);
  });

  it.each([
    ["too big", cspReport("x".repeat(40 * 1024)), {}, 413, "envelope_too_large"],
    ["not JSON", "<html>", {}, 400, "report_invalid"],
    ["not a CSP report", JSON.stringify({ hello: "world" }), {}, 400, "report_invalid"],
    ["an envelope", buildEnvelope().body.toString("utf8"), { "content-type": "application/x-sentry-envelope" }, 415, "report_unsupported_type"],
    ["a batch of other reports", JSON.stringify([{ type: "deprecation", body: {} }]), { "content-type": "application/reports+json" }, 400, "report_invalid"],
  ])("refuses a report that is %s, and sends nothing", async (_name, body, headers, status, reason) => {
    const response = await report(body, { "cf-connecting-ip": `203.0.113.${40 + status % 7}`, ...headers });
    expect(response.status).toBe(status);
    expect(await response.json()).toMatchObject({ reason });
    await ingest.settled();
    expect(ingest.arrivals).toBe(0);
  });

  it("refuses a client that reports too often, with the tunnel's limit", async () => {
    await freshWindow(3_000);
    const statuses: number[] = [];
    for (let sent = 0; sent < 8; sent += 1) {
      const response = await report(cspReport(), { "cf-connecting-ip": "203.0.113.50" });
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(ingest.deliveries).toHaveLength(5);
  });
});
