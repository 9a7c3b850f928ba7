import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

import { FakeIngest } from "../../test/support/fake-ingest";
import { readConfig } from "../config.server";
import type { TunnelLogLine } from "./log-line.server";
import type { TunnelRuntime } from "./settings.server";
import { createTunnel } from "./tunnel.server";

const DSN = "https://0123456789abcdef0123456789abcdef@o1.ingest.us.sentry.io/2";
const APP = "https://app.example.com";
const PARTNER = "https://partner.example.com";
const TUNNEL = `${APP}/monitoring?o=1&p=2&r=us`;

let ingest: FakeIngest;
beforeAll(async () => {
  ingest = await FakeIngest.start();
});
afterAll(() => ingest.stop());
beforeEach(() => ingest.reset());

function tunnelWith(runtime: TunnelRuntime = {}) {
  const log: TunnelLogLine[] = [];
  const settings = readConfig({
    SENTRY_DSN: DSN,
    TUNNEL_ALLOWED_ORIGINS: PARTNER,
    TUNNEL_RATE_LIMIT_PERIOD_SECONDS: "30",
    TUNNEL_UPSTREAM_ORIGIN: ingest.origin,
  }).tunnel;
  return { tunnel: createTunnel(settings, { log: (line) => log.push(line), ...runtime }), log };
}

function envelopeRequest(headers: Record<string, string> = {}, url = TUNNEL, method = "POST"): Request {
  const body = `${JSON.stringify({ dsn: DSN })}\n{"type":"event"}\n{}\n`;
  return new Request(url, {
    method,
    headers: { "content-length": String(Buffer.byteLength(body)), ...headers },
    ...(method === "POST" ? { body } : {}),
  });
}

async function reasonOf(response: Response): Promise<string> {
  return ((await response.json()) as { reason: string }).reason;
}

describe("createTunnel: the rate limiter", () => {
  it("asks per client address and answers 429 the way Sentry does when it says no", async () => {
    const limit = vi.fn(async () => ({ success: false }));
    const { tunnel, log } = tunnelWith({ rateLimiter: { limit } });
    const response = await tunnel(envelopeRequest({ "cf-connecting-ip": "203.0.113.5" }));
    expect(limit).toHaveBeenCalledWith({ key: "203.0.113.5" });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("30");
    expect(response.headers.get("x-sentry-rate-limits")).toBe("30::key");
    expect(await reasonOf(response)).toBe("rate_limited");
    expect(log[0]).toMatchObject({ outcome: "rejected", reason: "rate_limited", status: 429 });
  });

  it("counts requests it refuses too, and keys an IPv6 client by its /64", async () => {
    const limit = vi.fn(async () => ({ success: true }));
    const { tunnel } = tunnelWith({ rateLimiter: { limit } });
    const refused = [
      envelopeRequest({ "cf-connecting-ip": "2001:db8:7:8::1" }, TUNNEL, "GET"),
      envelopeRequest({ "cf-connecting-ip": "2001:db8:7:8::2" }, `${APP}/monitoring?x=1`),
      envelopeRequest({ "cf-connecting-ip": "2001:db8:7:8::3", origin: "https://evil.example" }),
      envelopeRequest({ "cf-connecting-ip": "2001:db8:7:8::4" }, `${APP}/Monitoring?o=1&p=2&r=us`),
    ];
    const statuses = [];
    for (const request of refused) statuses.push((await tunnel(request)).status);
    expect(statuses).toEqual([405, 400, 403, 404]);
    expect(limit.mock.calls).toEqual(Array(4).fill([{ key: "2001:db8:7:8::/64" }]));
  });

  it("lets envelopes through when the limiter itself fails", async () => {
    const { tunnel, log } = tunnelWith({ rateLimiter: { limit: async () => Promise.reject(new Error("limiter down")) } });
    const response = await tunnel(envelopeRequest());
    expect(response.status).toBe(200);
    expect(ingest.deliveries).toHaveLength(1);
    expect(log[0]).toMatchObject({ outcome: "forwarded", reason: null, upstream_status: 200 });
  });
});

describe("createTunnel: one path", () => {
  it.each(["/monitoring/", "/Monitoring", "//monitoring", "/%6Donitoring"])("answers %s with 404, and forwards nothing", async (path) => {
    const { tunnel } = tunnelWith();
    const response = await tunnel(envelopeRequest({}, `${APP}${path}?o=1&p=2&r=us`));
    expect(response.status).toBe(404);
    expect(await reasonOf(response)).toBe("not_found");
    expect(ingest.arrivals).toBe(0);
  });
});

describe("createTunnel: CORS", () => {
  it("answers a partner's preflight with 204 and the partner's own origin", async () => {
    const { tunnel, log } = tunnelWith();
    const response = await tunnel(
      envelopeRequest({ origin: PARTNER, "access-control-request-method": "POST" }, TUNNEL, "OPTIONS"),
    );
    expect(response.status).toBe(204);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "access-control-allow-origin": PARTNER,
      "access-control-allow-methods": "POST",
      "access-control-expose-headers": "Retry-After, X-Sentry-Rate-Limits",
      vary: "Origin",
    });
    expect(log[0]).toMatchObject({ outcome: "preflight", reason: null, status: 204 });
  });

  it("lets a partner read every answer, Sentry's rate limit included", async () => {
    ingest.respondWith((_request, response) => {
      response.writeHead(429, { "retry-after": "60", "x-sentry-rate-limits": "60:error:organization" });
      response.end();
    });
    const { tunnel } = tunnelWith();
    for (const request of [envelopeRequest({ origin: PARTNER }), envelopeRequest({ origin: PARTNER }, `${APP}/monitoring?p=x`)]) {
      const response = await tunnel(request);
      expect(response.headers.get("access-control-allow-origin")).toBe(PARTNER);
      expect(response.headers.get("access-control-expose-headers")).toBe("Retry-After, X-Sentry-Rate-Limits");
      expect(response.headers.get("vary")).toBe("Origin");
    }
  });

  it.each([
    ["another origin's preflight", { origin: "https://evil.example" }, "OPTIONS", 403],
    ["another origin's envelope", { origin: "https://evil.example" }, "POST", 403],
    ["the app's own envelope", { origin: APP }, "POST", 200],
    ["a preflight without an origin", {}, "OPTIONS", 405],
  ])("gives %s no CORS header at all", async (_name, headers, method, status) => {
    const { tunnel } = tunnelWith();
    const response = await tunnel(envelopeRequest(headers, TUNNEL, method));
    expect(response.status).toBe(status);
    expect([...response.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
  });
});

describe("createTunnel: Sentry's answer", () => {
  it("serves an HTML answer as inert text", async () => {
    ingest.respondWith((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end("<script>alert(document.cookie)</script>");
    });
    const response = await tunnelWith().tunnel(envelopeRequest());
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("drops an answer body over 64 KiB and keeps its status", async () => {
    ingest.respondWith((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(`"${"x".repeat(70 * 1024)}"`);
    });
    const response = await tunnelWith().tunnel(envelopeRequest());
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
  });
});

describe("createTunnel: around the core", () => {
  it("writes one analytics data point per request, with the log line's facts", async () => {
    const writeDataPoint = vi.fn();
    const { tunnel, log } = tunnelWith({ analytics: { writeDataPoint } });
    await tunnel(envelopeRequest({ origin: "https://evil.example" }, `${APP}/monitoring?o=1&p=2&r=us`));
    expect(writeDataPoint).toHaveBeenCalledTimes(1);
    expect(writeDataPoint).toHaveBeenCalledWith({
      blobs: ["rejected", "origin_not_allowed", ""],
      doubles: [0, log[0]!.duration_ms, 403],
      indexes: [""],
    });
  });

  it("answers 500 for its own bug, reports it with the request, and logs it as failed", async () => {
    const reportError = vi.fn();
    const { tunnel, log } = tunnelWith({ reportError });
    const request = envelopeRequest();
    Object.defineProperty(request, "url", {
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
});
