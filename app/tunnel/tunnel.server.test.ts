import { describe, expect, it, vi } from "vitest";

import { readConfig } from "../config.server";
import { tunnelDataPoint } from "./analytics.server";
import { handleTunnelRequest, type TunnelLogLine } from "./tunnel.server";

const DSN = "https://0123456789abcdef0123456789abcdef@o1.ingest.us.sentry.io/2";
const config = readConfig({ SENTRY_DSN: DSN, TUNNEL_RATE_LIMIT_PERIOD_SECONDS: "30" }).tunnel;

function post(headers: Record<string, string> = {}, path = "/monitoring?o=1&p=2&r=us"): Request {
  return new Request(`https://app.example.com${path}`, {
    method: "POST",
    headers,
    body: `${JSON.stringify({ dsn: "https://ffff@o9.ingest.us.sentry.io/9" })}\n{}`,
  });
}

describe("handleTunnelRequest, around the core", () => {
  it("asks the limiter per client IP and answers 429 the way Sentry does when it says no", async () => {
    const limit = vi.fn(async () => ({ success: false }));
    const log: TunnelLogLine[] = [];
    const response = await handleTunnelRequest(post({ "cf-connecting-ip": "203.0.113.5" }), config, {
      rateLimiter: { limit },
      log: (line) => log.push(line),
    });
    expect(limit).toHaveBeenCalledWith({ key: "203.0.113.5" });
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("30");
    expect(response.headers.get("x-sentry-rate-limits")).toBe("30::key");
    expect(await response.json()).toMatchObject({ reason: "rate_limited" });
    expect(log[0]).toMatchObject({ outcome: "rejected", reason: "rate_limited", status: 429 });
  });

  it("lets envelopes through when the limiter itself fails", async () => {
    const response = await handleTunnelRequest(post(), config, {
      rateLimiter: { limit: async () => Promise.reject(new Error("limiter down")) },
      log: () => {},
    });
    // Past the limiter, this envelope's DSN is refused: the limiter did not stop it.
    expect(response.status).toBe(403);
  });

  it("writes one analytics data point per request, with the log line's facts", async () => {
    const writeDataPoint = vi.fn();
    const log: TunnelLogLine[] = [];
    await handleTunnelRequest(post({ origin: "https://evil.example" }), config, {
      analytics: { writeDataPoint },
      log: (line) => log.push(line),
    });
    expect(writeDataPoint).toHaveBeenCalledTimes(1);
    expect(writeDataPoint).toHaveBeenCalledWith(tunnelDataPoint(log[0]!));
    expect(tunnelDataPoint(log[0]!)).toEqual({
      blobs: ["rejected", "origin_not_allowed", "us"],
      doubles: [0, log[0]!.duration_ms, 403],
      indexes: ["2"],
    });
  });

  it("answers 500 for its own bug, reports it, and logs it as failed", async () => {
    const broken = { ...config, allowedDsns: new Map() };
    vi.spyOn(broken.allowedDsns, "get").mockImplementation(() => {
      throw new TypeError("a bug in the tunnel");
    });
    const reportError = vi.fn();
    const log: TunnelLogLine[] = [];
    const response = await handleTunnelRequest(post(), broken, { reportError, log: (line) => log.push(line) });
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ reason: "internal_error" });
    expect(reportError).toHaveBeenCalledWith(expect.objectContaining({ message: "a bug in the tunnel" }));
    expect(log[0]).toMatchObject({ outcome: "failed", reason: "internal_error", status: 500 });
  });
});
