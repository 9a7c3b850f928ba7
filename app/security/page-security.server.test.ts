import { describe, expect, it } from "vitest";

import { newNonce, pageSecurityHeaders } from "./page-security.server";

function directives(policy: string): Map<string, string> {
  return new Map(policy.split("; ").map((directive) => [directive.split(" ", 1)[0]!, directive.slice(directive.indexOf(" ") + 1)]));
}

describe("pageSecurityHeaders", () => {
  it("lets only our own files and this response's nonced scripts run, and no one frame the page", () => {
    const headers = pageSecurityHeaders("n0nce", "https://app.example/monitoring/security-report");
    const policy = directives(headers["content-security-policy"]!);
    expect(policy.get("script-src")).toBe("'self' 'nonce-n0nce'");
    expect(policy.get("connect-src")).toBe("'self'");
    expect(policy.get("frame-ancestors")).toBe("'none'");
    expect(policy.get("object-src")).toBe("'none'");
    expect(policy.get("report-uri")).toBe("https://app.example/monitoring/security-report");
    expect(policy.has("report-to")).toBe(false);
    expect(headers).toMatchObject({
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "strict-origin-when-cross-origin",
    });
  });

  it("lets pages fetch from the configured origins besides their own", () => {
    const policy = directives(pageSecurityHeaders("n0nce", undefined, ["https://api.example.com"])["content-security-policy"]!);
    expect(policy.get("connect-src")).toBe("'self' https://api.example.com");
  });

  it("lets wrangler's live-reload script run in development only, without a nonce there", () => {
    const policy = directives(pageSecurityHeaders("n0nce", undefined, [], { development: true })["content-security-policy"]!);
    expect(policy.get("script-src")).toBe("'self' 'unsafe-inline'");
    expect(policy.get("frame-ancestors")).toBe("'none'");
  });

  it("names no report endpoint when monitoring is off", () => {
    const headers = pageSecurityHeaders("n0nce", undefined);
    expect(headers["content-security-policy"]).not.toContain("report");
  });
});

describe("newNonce", () => {
  it("is 128 bits of base64, new every time", () => {
    const nonces = new Set(Array.from({ length: 100 }, newNonce));
    expect(nonces.size).toBe(100);
    for (const nonce of nonces) expect(nonce).toMatch(/^[A-Za-z0-9+/]{22}==$/);
  });
});
