import { describe, expect, it, vi } from "vitest";

import { admit, createGate } from "./admit.ts";
import type { ClientLimiter } from "../request/client-limiter.ts";
import { readTunnelSettings } from "../../test/support/test-settings.ts";
import { compileAllowList } from "../upstream/allow-list.ts";
import { TEST_DSN } from "../testing/harness.ts";

const APP = "https://app.example.com";
const PARTNER = "https://partner.example.com";
const settings = readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ALLOWED_ORIGINS: PARTNER });
const allowList = compileAllowList(settings.allowedDsns, undefined);
const everyClient: ClientLimiter = async () => true;

function gateWith(clientAllowed: ClientLimiter = everyClient) {
  return createGate(settings, clientAllowed, allowList, true);
}

const request = (path: string, init: RequestInit = {}) => new Request(`${APP}${path}`, { method: "POST", ...init });

describe("admit: what needs no body", () => {
  it.each([
    ["another path", request("/monitoring/x?o=4501&p=4502&r=us"), 404, "not_found"],
    ["a foreign origin", request("/monitoring?o=4501&p=4502&r=us", { headers: { origin: "https://evil.example" } }), 403, "origin_not_allowed"],
    ["GET", request("/monitoring?o=4501&p=4502&r=us", { method: "GET" }), 405, "method_not_allowed"],
    ["a malformed query", request("/monitoring?o=1&p=x"), 400, "invalid_query"],
    ["a query naming another project", request("/monitoring?o=4501&p=4503&r=us"), 403, "query_not_allowed"],
  ])("refuses %s with its code", async (_, refused, status, code) => {
    const admission = await admit(refused, gateWith());
    expect(admission.admitted).toBe(false);
    if (admission.admitted) return;
    expect(admission.answer.code).toBe(code);
    expect(admission.answer.response.status).toBe(status);
  });

  it("tells a client over its limit to wait the limiter's period, as Sentry would", async () => {
    const admission = await admit(request("/monitoring?o=4501&p=4502&r=us", { headers: { "cf-connecting-ip": "203.0.113.4" } }), gateWith(async () => false));
    expect(admission).toMatchObject({ admitted: false, kind: "envelope", answer: { code: "rate_limited" } });
    if (admission.admitted) return;
    expect(Object.fromEntries(admission.answer.response.headers)).toMatchObject({ "retry-after": "10", "x-sentry-rate-limits": "10::key" });
  });

  it("says a CSP report over the client's limit was a CSP report, for its log line", async () => {
    const admission = await admit(request(`${settings.route}/csp`), gateWith(async () => false));
    expect(admission).toMatchObject({ admitted: false, kind: "security_report", answer: { code: "rate_limited" } });
  });

  it("answers a partner's preflight, with an allow header that says OPTIONS to others", async () => {
    const preflight = await admit(request("/monitoring?o=4501&p=4502&r=us", { method: "OPTIONS", headers: { origin: PARTNER } }), gateWith());
    expect(preflight).toMatchObject({ admitted: false, answer: { code: null, outcome: "preflight" } });
    const get = await admit(request("/monitoring?o=4501&p=4502&r=us", { method: "GET" }), gateWith());
    if (get.admitted) throw new Error("admitted a GET");
    expect(get.answer.response.headers.get("allow")).toBe("POST, OPTIONS");
  });

  it("admits an envelope with its query, the app's own origin or none", async () => {
    const limit = vi.fn(async () => true);
    for (const headers of [{}, { origin: APP }, { origin: PARTNER }] as Record<string, string>[]) {
      expect(await admit(request("/monitoring?o=4501&p=4502&r=us", { headers }), gateWith(limit))).toEqual({
        admitted: true,
        kind: "envelope",
        query: { org: "4501", project: "4502", region: "us" },
      });
    }
    expect(limit).toHaveBeenCalledTimes(3);
  });

  it("admits an envelope on the app's route with no query: the DSN alone names the project", async () => {
    expect(settings.route).toMatch(/^\/[a-z0-9]{10}$/);
    expect(await admit(request(settings.route), gateWith())).toEqual({ admitted: true, kind: "envelope", query: undefined });
    const queried = await admit(request(`${settings.route}?o=4501&p=4502&r=us`), gateWith());
    expect(queried).toMatchObject({ admitted: false, answer: { code: "invalid_query" } });
    const retired = createGate(readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: "/k7q2x9", TUNNEL_RETIRED_ROUTES: "/a3f8c1" }), everyClient, allowList, true);
    for (const path of ["/k7q2x9", "/a3f8c1", settings.route]) expect(await admit(request(path), retired), path).toMatchObject({ admitted: true });
    expect(await admit(request("/b4e9d2"), retired)).toMatchObject({ admitted: false, answer: { code: "not_found" } });
  });

  it("admits a CSP report beside each route", async () => {
    for (const path of [`${settings.route}/csp`, "/monitoring/security-report"]) {
      expect(await admit(request(path), gateWith()), path).toMatchObject({ admitted: true, kind: "security_report" });
    }
  });

  it("admits a CSP report to the app's own project only when the app has one", async () => {
    const withProject = await admit(request("/monitoring/security-report"), gateWith());
    expect(withProject).toMatchObject({ admitted: true, kind: "security_report", target: { project: { org: "4501", project: "4502", region: "us" } } });
    const bare = createGate(readTunnelSettings({ TUNNEL_ALLOWED_DSNS: TEST_DSN }), everyClient, allowList, true);
    expect(await admit(request("/monitoring/security-report"), bare)).toMatchObject({ admitted: false, answer: { code: "not_found" } });
  });
});
