import { describe, expect, it, vi } from "vitest";

import type { LogLine } from "../src/index.ts";
import type { TunnelRuntime } from "../src/index.ts";
import { answerOf, readTunnelSettings, tunnelFromEnv, type TestEnv } from "./support/test-settings.ts";
import { EVERY_CLIENT, StubSentry, TEST_DSN } from "../src/testing/harness.ts";
import type { TunnelWorker } from "../src/index.ts";

const APP = "https://app.example.com";
const PARTNER = "https://partner.example.com";
const TUNNEL = `${APP}/monitoring?o=4501&p=4502&r=us`;
/** Every request's line, those of envelopes Sentry took included: these tests read them. */
const ENV: TestEnv = { SENTRY_DSN: TEST_DSN, TUNNEL_ALLOWED_ORIGINS: PARTNER, TUNNEL_LOG_FORWARDED: "on" };
const settings = readTunnelSettings(ENV);

/** Sentry as the harness's stub `fetch`, answering as `answer` says (200 by default). */
function sentryAnswering(answer?: () => Response): StubSentry {
  const sentry = new StubSentry();
  if (answer) sentry.answer = answer;
  return sentry;
}

/** The URLs Sentry was asked, in order. */
const urlsOf = (sentry: StubSentry) => sentry.took.map((took) => took.url);

interface TunnelWith {
  bindings?: TestEnv;
  runtime?: TunnelRuntime;
  sentry?: StubSentry;
  variables?: TestEnv;
}

/** The tunnel as a Worker reading `env` builds it, every client allowed unless a limiter is given, Sentry a stub. */
function tunnelWith({ bindings = {}, runtime = {}, sentry = sentryAnswering(), variables }: TunnelWith = {}) {
  const log: LogLine[] = [];
  const env = { ...(variables ? { SENTRY_DSN: TEST_DSN, TUNNEL_ALLOWED_ORIGINS: PARTNER, ...variables } : ENV), TUNNEL_RATE_LIMITER: EVERY_CLIENT, ...bindings };
  const worker = tunnelFromEnv(env, { log: (line) => log.push(line), fetch: sentry.fetch, ...runtime });
  return { tunnel: (request: Request) => answerOf(worker, request), worker, log, sentry };
}

function envelopeRequest(headers: Record<string, string> = {}, url = TUNNEL, method = "POST"): Request {
  const body = `${JSON.stringify({ dsn: TEST_DSN })}\n{"type":"event"}\n{}\n`;
  return new Request(url, {
    method,
    headers: { "content-length": String(Buffer.byteLength(body)), ...headers },
    ...(method === "POST" ? { body } : {}),
  });
}

async function reasonOf(response: Response): Promise<string> {
  return ((await response.json()) as { reason: string }).reason;
}

describe("the tunnel: what a host calls", () => {
  it("handle() answers what the tunnel serves, and leaves the rest to the host", async () => {
    const { worker, sentry } = tunnelWith();
    expect((await worker.handle(envelopeRequest()))?.status).toBe(200);
    expect(urlsOf(sentry)).toHaveLength(1);
    expect(await worker.handle(new Request(`${APP}/shop`))).toBeUndefined();
    expect(await worker.handle(envelopeRequest({}, `${APP}/monitoring-guide`))).toBeUndefined();
    expect(urlsOf(sentry)).toHaveLength(1);
  });

  it("describe() says what it serves and names each binding as bound or not", () => {
    const { worker } = tunnelWith();
    expect(worker.describe()).toMatchObject({
      pages_post_to: worker.pageUrl(),
      routes_served: settings.routes,
      csp_reports_served: settings.routes.map((route) => (route === "/monitoring" ? "/monitoring/security-report" : `${route}/csp`)),
      rate_limiter: expect.stringMatching(/^on: TUNNEL_RATE_LIMITER/),
      spool: expect.stringMatching(/^off: no spool/),
      large_bodies: expect.stringMatching(/^off: no spool/),
      forwarded_lines: expect.stringMatching(/^on: every envelope Sentry took is logged too/),
    });
  });
});

describe("the tunnel: the limits it requires", () => {
  const limiter = EVERY_CLIENT;
  const queue = { send: async () => {} };
  const refusal = (variables: TestEnv, bindings: TestEnv) => {
    try {
      tunnelFromEnv({ SENTRY_DSN: TEST_DSN, ...variables, ...bindings });
    } catch (error) {
      return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    }
    return "started";
  };

  it.each([
    ["no request limiter", {}, {}, "ConfigError: TUNNEL_RATE_LIMITER is not bound"],
    ["a spool without its client budget", {}, { TUNNEL_RATE_LIMITER: limiter, TUNNEL_SPOOL: queue, TUNNEL_SPOOL_TOTAL_BUDGET: limiter }, "ConfigError: TUNNEL_SPOOL_CLIENT_BUDGET is not bound"],
    ["a spool without its total budget", {}, { TUNNEL_RATE_LIMITER: limiter, TUNNEL_SPOOL: queue, TUNNEL_SPOOL_CLIENT_BUDGET: limiter }, "ConfigError: TUNNEL_SPOOL_TOTAL_BUDGET is not bound"],
    ["limits turned off with a limiter bound", { TUNNEL_RATE_LIMITING: "off" }, { TUNNEL_RATE_LIMITER: limiter }, "ConfigError: TUNNEL_RATE_LIMITING is off, but TUNNEL_RATE_LIMITER is bound"],
    ["limits turned off with a spool budget bound", { TUNNEL_RATE_LIMITING: "off" }, { TUNNEL_SPOOL: queue, TUNNEL_SPOOL_CLIENT_BUDGET: limiter }, "ConfigError: TUNNEL_RATE_LIMITING is off, but TUNNEL_SPOOL_CLIENT_BUDGET is given"],
  ] as [string, TestEnv, TestEnv, string][])("does not start with %s, and names what is wrong", (_, variables, bindings, said) => {
    expect(refusal(variables, bindings)).toContain(said);
  });

  it("starts with every limit bound, without a spool, or with no limit said on purpose", () => {
    expect(refusal({}, { TUNNEL_RATE_LIMITER: limiter, TUNNEL_SPOOL: queue, TUNNEL_SPOOL_CLIENT_BUDGET: limiter, TUNNEL_SPOOL_TOTAL_BUDGET: limiter })).toBe("started");
    expect(refusal({}, { TUNNEL_RATE_LIMITER: limiter })).toBe("started");
    expect(refusal({ TUNNEL_RATE_LIMITING: "off" }, { TUNNEL_SPOOL: queue })).toBe("started");
  });
});

describe("the tunnel: its own queues, and no other", () => {
  const queueBatch = (queue: string) => {
    const acked: string[] = [];
    const retried: string[] = [];
    const batch = {
      queue,
      messages: [{ id: "1", body: { mine: true }, attempts: 1, timestamp: new Date(), ack: () => acked.push("1"), retry: () => retried.push("1") }],
      ackAll: () => acked.push("all"),
      retryAll: () => retried.push("all"),
    } as unknown as MessageBatch<unknown>;
    return { batch, acked, retried };
  };

  it("says which queues it takes, by the names its settings give", () => {
    const spool = { TUNNEL_SPOOL: { send: async () => {} }, TUNNEL_SPOOL_CLIENT_BUDGET: EVERY_CLIENT, TUNNEL_SPOOL_TOTAL_BUDGET: EVERY_CLIENT };
    const { worker } = tunnelWith({ variables: { TUNNEL_SPOOL_QUEUE_NAME: "staging-spool", TUNNEL_DEAD_LETTER_QUEUE_NAME: "staging-spool-dead", TUNNEL_ROUTE: "/s3g4x9" }, bindings: spool });
    expect(["staging-spool", "staging-spool-dead", "tunnel-spool", "orders"].map((name) => worker.handlesQueue(name))).toEqual([true, true, false, false]);
  });

  it("throws another queue's batch back, acknowledging none of it, so that the runtime delivers it again", async () => {
    const { worker } = tunnelWith({ bindings: { TUNNEL_SPOOL: { send: async () => {} }, TUNNEL_SPOOL_CLIENT_BUDGET: EVERY_CLIENT, TUNNEL_SPOOL_TOTAL_BUDGET: EVERY_CLIENT } });
    const { batch, acked, retried } = queueBatch("orders");
    await expect(worker.queue(batch)).rejects.toThrow('The tunnel acknowledged none of this batch: queue "orders" is not its own.');
    expect({ acked, retried }).toEqual({ acked: [], retried: [] });
  });
});

describe("the tunnel: CSP reports, held where an envelope would be", () => {
  const ENVELOPE_ENDPOINT = "https://o4501.ingest.us.sentry.io/api/4502/envelope/?hsts=0";
  const reportRequest = (headers: Record<string, string> = {}) =>
    new Request(`${APP}${settings.route}/csp`, {
      method: "POST",
      headers: { "content-type": "application/csp-report", ...headers },
      body: JSON.stringify({ "csp-report": { "document-uri": `${APP}/`, "blocked-uri": "https://evil.example/x.js" } }),
    });
  /** The counts of the client report the tunnel sends once it flushes, as Sentry would read them. */
  async function clientReportAfter(worker: TunnelWorker, sentry: StubSentry) {
    await worker.clientShare.reports.flush();
    const report = sentry.took.find((took) => new TextDecoder().decode(took.body).includes('{"type":"client_report"}'));
    expect(report?.url).toBe(ENVELOPE_ENDPOINT);
    return sentry.clientReports()[0] as unknown[];
  }

  it("holds every report while Sentry rate-limits the project, and counts them for the project's Stats", async () => {
    const sentry = sentryAnswering(() => new Response(null, { status: 429, headers: { "retry-after": "37", "x-sentry-rate-limits": "37::organization" } }));
    let now = 1_800_000_000_000;
    const { tunnel, worker, log } = tunnelWith({ sentry, runtime: { now: () => now } });
    expect((await tunnel(envelopeRequest())).status).toBe(429);
    const statuses = [];
    for (let report = 0; report < 20; report += 1) statuses.push((await tunnel(reportRequest())).status);
    expect(statuses).toEqual(Array(20).fill(429));
    expect(urlsOf(sentry)).toEqual([ENVELOPE_ENDPOINT]);
    // One line for the client's first refusal of the limiter's window of 10 s; the rest are carried
    // by a line of their own once a later window begins.
    const refusal = { kind: "security_report", outcome: "rejected", reason: "sentry_rate_limited", upstream_status: null };
    expect(log.slice(1)).toEqual([expect.objectContaining({ ...refusal, repeats: 0 })]);
    now += 60_000;
    await tunnel(envelopeRequest({}, TUNNEL, "GET"));
    expect(log.slice(2, 3)).toEqual([expect.objectContaining({ ...refusal, repeats: 18 })]);
    expect(await clientReportAfter(worker, sentry)).toEqual([{ reason: "ratelimit_backoff", category: "security", quantity: 20 }]);
  });

  it("holds reports while the ingest's breaker is open, whether envelopes or reports opened it", async () => {
    for (const opener of [envelopeRequest, reportRequest]) {
      const sentry = sentryAnswering(() => new Response("down", { status: 503 }));
      const { tunnel, worker, log } = tunnelWith({ sentry });
      for (let failure = 0; failure < 3; failure += 1) await tunnel(opener());
      expect(urlsOf(sentry)).toHaveLength(3);
      const held = await tunnel(reportRequest());
      expect(held.status).toBe(503);
      expect(await reasonOf(held)).toBe("sentry_unavailable");
      expect(urlsOf(sentry)).toHaveLength(3);
      expect(log[3]).toMatchObject({ kind: "security_report", outcome: "failed", reason: "sentry_unavailable" });
      // The reports Sentry failed on are lost too, and counted as such.
      const lost = opener === reportRequest ? 4 : 1;
      expect(await clientReportAfter(worker, sentry)).toEqual([{ reason: "network_error", category: "security", quantity: lost }]);
    }
  });

  it("counts a report over its client's share, which no browser counts", async () => {
    const { tunnel, worker, sentry } = tunnelWith({ bindings: { TUNNEL_RATE_LIMITER: { limit: async () => ({ success: false }) } } });
    expect((await tunnel(reportRequest({ "cf-connecting-ip": "203.0.113.5" }))).status).toBe(429);
    expect(urlsOf(sentry)).toEqual([]);
    expect(await clientReportAfter(worker, sentry)).toEqual([{ reason: "ratelimit_backoff", category: "security", quantity: 1 }]);
  });

  it("sends a report while only another category is limited, and counts nothing", async () => {
    let answer = () => new Response(null, { status: 429, headers: { "x-sentry-rate-limits": "60:error:project" } });
    const sentry = sentryAnswering(() => answer());
    const { tunnel, worker } = tunnelWith({ sentry });
    await tunnel(envelopeRequest());
    answer = () => new Response("{}", { status: 200 });
    expect((await tunnel(reportRequest())).status).toBe(200);
    expect(urlsOf(sentry)[1]).toMatch(/^https:\/\/o4501\.ingest\.us\.sentry\.io\/api\/4502\/security\/\?sentry_key=/);
    await worker.clientShare.reports.flush();
    expect(urlsOf(sentry)).toHaveLength(2);
  });
});

describe("the tunnel: the URL a page's SDK is given", () => {
  const SAAS = "https://0123456789abcdef0123456789abcdef@o11.ingest.us.sentry.io/21";
  it.each([
    ["the derived route", { SENTRY_DSN: SAAS }, SAAS, /^\/[a-z0-9]{10}$/, "https://o11.ingest.us.sentry.io/api/21/envelope/?hsts=0"],
    ["a chosen route", { SENTRY_DSN: SAAS, TUNNEL_ROUTE: "/k7q2x9" }, SAAS, /^\/k7q2x9$/, "https://o11.ingest.us.sentry.io/api/21/envelope/?hsts=0"],
    ["the original route, SaaS with a region", { SENTRY_DSN: SAAS, TUNNEL_ROUTE: "/monitoring" }, SAAS, /^\/monitoring\?o=11&p=21&r=us$/, "https://o11.ingest.us.sentry.io/api/21/envelope/?hsts=0"],
    ["the original route, SaaS without one", { SENTRY_DSN: "https://k@o13.ingest.sentry.io/23", TUNNEL_ROUTE: "/monitoring" }, "https://k@o13.ingest.sentry.io/23", /^\/monitoring\?o=13&p=23$/, "https://o13.ingest.sentry.io/api/23/envelope/?hsts=0"],
    ["the original route, self-hosted", { SENTRY_DSN: "https://k@sentry.example.com/base/24", TUNNEL_ROUTE: "/monitoring" }, "https://k@sentry.example.com/base/24", /^\/monitoring\?p=24$/, "https://sentry.example.com/base/api/24/envelope/"],
    ["no SENTRY_DSN, another allowed DSN", { TUNNEL_ALLOWED_DSNS: SAAS }, SAAS, /^\/monitoring\?o=11&p=21&r=us$/, "https://o11.ingest.us.sentry.io/api/21/envelope/?hsts=0"],
  ] as const)("is one the tunnel takes an envelope at: %s", async (_case, variables: TestEnv, dsn, shape, upstream) => {
    const sentry = sentryAnswering();
    const worker = tunnelFromEnv({ ...variables, TUNNEL_RATE_LIMITER: EVERY_CLIENT }, { fetch: sentry.fetch, log: () => {} });
    const url = worker.pageUrl(dsn);
    expect(url).toMatch(shape);
    const body = `${JSON.stringify({ dsn })}\n{"type":"event"}\n{}\n`;
    const response = await answerOf(worker, new Request(`${APP}${url}`, { method: "POST", headers: { "content-length": String(body.length) }, body }));
    expect(response.status).toBe(200);
    expect(urlsOf(sentry)).toEqual([upstream]);
  });

  it("is none for a DSN the tunnel does not forward for, or without one", () => {
    expect(tunnelFromEnv({ SENTRY_DSN: SAAS, TUNNEL_RATE_LIMITER: EVERY_CLIENT }).pageUrl("https://k@o9.ingest.us.sentry.io/9")).toBeUndefined();
    expect(tunnelFromEnv({ TUNNEL_RATE_LIMITER: EVERY_CLIENT }).pageUrl()).toBeUndefined();
    // The TEST_DSN as a page may spell it, with a legacy secret: the allowed DSN it is.
    expect(tunnelFromEnv({ SENTRY_DSN: SAAS, TUNNEL_ROUTE: "/monitoring", TUNNEL_RATE_LIMITER: EVERY_CLIENT }).pageUrl(SAAS.replace("@", ":secret@"))).toBe("/monitoring?o=11&p=21&r=us");
  });
});

describe("the tunnel: around the core", () => {
  it("writes one analytics data point per request, with the log line's facts", async () => {
    const writeDataPoint = vi.fn();
    const { tunnel, log } = tunnelWith({ bindings: { TUNNEL_ANALYTICS: { writeDataPoint } } });
    await tunnel(envelopeRequest({ origin: "https://evil.example" }, `${APP}/monitoring?o=4501&p=4502&r=us`));
    expect(writeDataPoint).toHaveBeenCalledTimes(1);
    expect(writeDataPoint).toHaveBeenCalledWith({
      blobs: ["rejected", "origin_not_allowed", "", "1"],
      doubles: [0, (log[0] as { duration_ms: number }).duration_ms, 403, 0],
      indexes: [""],
    });
  });

  it("stamps every line and data point with the record's version, which operators' queries can tell by", async () => {
    const writeDataPoint = vi.fn();
    const { tunnel, worker, log } = tunnelWith({ bindings: { TUNNEL_ANALYTICS: { writeDataPoint } } });
    await tunnel(envelopeRequest());
    await tunnel(envelopeRequest({ origin: "https://evil.example" }));
    await worker.spoolHeartbeat();
    expect(log.map((line) => [line.event, line.v])).toEqual([
      ["tunnel", 1],
      ["tunnel", 1],
    ]);
    expect(writeDataPoint.mock.calls.map(([point]) => (point as AnalyticsEngineDataPoint).blobs?.[3])).toEqual(["1", "1"]);
  });

  it("puts Sentry's own status in the data point, where the status the client got can differ", async () => {
    const writeDataPoint = vi.fn();
    const { tunnel } = tunnelWith({
      bindings: { TUNNEL_ANALYTICS: { writeDataPoint }, TUNNEL_SPOOL: { send: async () => {} }, TUNNEL_SPOOL_CLIENT_BUDGET: EVERY_CLIENT, TUNNEL_SPOOL_TOTAL_BUDGET: EVERY_CLIENT },
      sentry: sentryAnswering(() => new Response("busy", { status: 503 })),
    });
    expect((await tunnel(envelopeRequest())).status).toBe(202);
    expect(writeDataPoint).toHaveBeenCalledWith(expect.objectContaining({ blobs: ["spooled", "spooled", "us", "1"], doubles: [expect.any(Number), expect.any(Number), 202, 503] }));
  });

  it("answers 500 for its own bug, reports it with the request, and logs it as failed", async () => {
    const reportError = vi.fn();
    const { tunnel, log } = tunnelWith({ runtime: { reportError } });
    const request = envelopeRequest();
    // Read by the tunnel's stages, not by handle()'s choice of what it serves.
    Object.defineProperty(request, "method", {
      get() {
        throw new TypeError("a bug in the tunnel");
      },
    });
    const response = await tunnel(request);
    expect(response.status).toBe(500);
    expect(await reasonOf(response)).toBe("internal_error");
    expect(reportError).toHaveBeenCalledWith(expect.objectContaining({ message: "a bug in the tunnel" }), request);
    expect(log[0]).toMatchObject({ outcome: "failed", reason: "internal_error", status: 500 });
  });

  it("logs a CSP report it failed on as a CSP report", async () => {
    const { tunnel, log } = tunnelWith({ runtime: { reportError: () => {} } });
    const request = new Request(`${APP}${settings.route}/csp`, { method: "POST", headers: { "content-type": "application/csp-report" }, body: "{}" });
    Object.defineProperty(request, "body", {
      get() {
        throw new TypeError("a bug in the tunnel");
      },
    });
    expect((await tunnel(request)).status).toBe(500);
    expect(log[0]).toMatchObject({ kind: "security_report", reason: "internal_error" });
  });
});

describe("the tunnel: its record, priced", () => {
  /** A data point's outcome, reason and status, as the dataset's blob1, blob2 and double3 hold them. */
  function recorded() {
    const points: string[] = [];
    const analytics = { writeDataPoint: (point?: AnalyticsEngineDataPoint) => void points.push(`${point?.blobs?.[0]} ${point?.blobs?.[1]} ${point?.doubles?.[2]}`) };
    return { points, analytics };
  }

  it("by default logs no line for an envelope Sentry took, or a preflight, but a data point for each; and a line for all else", async () => {
    const { points, analytics } = recorded();
    let answer = 200;
    const sentry = sentryAnswering(() => new Response(null, { status: answer }));
    const { tunnel, worker, log } = tunnelWith({ variables: {}, bindings: { TUNNEL_ANALYTICS: analytics }, sentry });
    expect(worker.describe().forwarded_lines).toMatch(/^off: /);
    await tunnel(envelopeRequest());
    await tunnel(envelopeRequest({ origin: PARTNER, "access-control-request-method": "POST" }, TUNNEL, "OPTIONS"));
    answer = 413;
    await tunnel(envelopeRequest());
    await tunnel(envelopeRequest({ origin: "https://evil.example" }));
    expect(points).toEqual(["forwarded  200", "preflight  204", "forwarded  413", "rejected origin_not_allowed 403"]);
    expect(log).toMatchObject([
      { outcome: "forwarded", upstream_status: 413 },
      { outcome: "rejected", reason: "origin_not_allowed" },
    ]);
  });

  it("says the envelopes Sentry took in a counted line when no Analytics Engine dataset is bound to count them, and says so", async () => {
    const { tunnel, worker, log } = tunnelWith({ variables: {} });
    await tunnel(envelopeRequest());
    expect(log).toMatchObject([{ outcome: "forwarded", upstream_status: 200, repeats: 0 }]);
    expect(worker.describe().forwarded_lines).toMatch(/^counted: TUNNEL_ANALYTICS is not given/);
  });

  it("logs the envelope Sentry took too with TUNNEL_LOG_FORWARDED=on, and refuses any other value at start", async () => {
    const { tunnel, log } = tunnelWith({ variables: { TUNNEL_LOG_FORWARDED: "on" }, bindings: { TUNNEL_ANALYTICS: recorded().analytics } });
    await tunnel(envelopeRequest());
    expect(log).toMatchObject([{ outcome: "forwarded", upstream_status: 200 }]);
    expect(() => readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_LOG_FORWARDED: "sometimes" })).toThrow(/TUNNEL_LOG_FORWARDED/);
  });
});
