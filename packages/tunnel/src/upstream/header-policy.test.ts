import { describe, expect, it } from "vitest";

import { returnedResponseHeaders, upstreamRequestHeaders } from "./header-policy.ts";

describe("upstreamRequestHeaders", () => {
  const client = new Headers({
    cookie: "session=secret",
    authorization: "Bearer secret",
    "x-api-key": "secret",
    "cf-connecting-ip": "203.0.113.7",
    "x-forwarded-for": "198.51.100.1",
    "user-agent": "Mozilla/5.0 Test",
    origin: "https://app.example.com",
    referer: "https://app.example.com/page",
    "sec-ch-ua": '"Chromium";v="156"',
    "sec-ch-ua-platform": '"Linux"',
    "sec-ch-ua-model": '"Pixel 9"',
    "sec-ch-ua-platform-version": '"15.0.0"',
    "sec-ch-ua-mobile": "?1",
    "sec-ch-ua-full-version-list": '"Chromium";v="156.0.8078.73"',
    "sec-ch-ua-evil": "smuggled",
    "content-type": "text/plain;charset=UTF-8",
    host: "app.example.com",
  });

  it("sends the client's identity and IP, the client hints Relay reads by exact name only, and no first-party header", () => {
    const headers = upstreamRequestHeaders(client, "identity", 123);
    expect(headers).toEqual({
      "content-type": "application/x-sentry-envelope",
      "content-length": "123",
      "user-agent": "Mozilla/5.0 Test",
      origin: "https://app.example.com",
      referer: "https://app.example.com/page",
      "sec-ch-ua": '"Chromium";v="156"',
      "sec-ch-ua-model": '"Pixel 9"',
      "sec-ch-ua-platform": '"Linux"',
      "sec-ch-ua-platform-version": '"15.0.0"',
      "x-forwarded-for": "203.0.113.7",
      "x-sentry-forwarded-for": "203.0.113.7",
    });
  });

  it("keeps the body's encoding and leaves out an unknown length", () => {
    const headers = upstreamRequestHeaders(new Headers(), "gzip", undefined);
    expect(headers["content-encoding"]).toBe("gzip");
    expect(headers).not.toHaveProperty("content-length");
    expect(headers).not.toHaveProperty("x-forwarded-for");
  });
});

describe("returnedResponseHeaders", () => {
  it("passes on what the SDK's back-off reads, and nothing that would act on our domain", () => {
    const upstream = new Headers({
      "content-type": "application/json",
      "retry-after": "60",
      "x-sentry-rate-limits": "60:error;transaction:organization",
      "strict-transport-security": "max-age=31536000; includeSubDomains; preload",
      "set-cookie": "sentry=1",
      "access-control-allow-origin": "*",
      "content-security-policy": "default-src *",
      server: "nginx",
    });
    expect(returnedResponseHeaders(upstream, true)).toEqual({
      "content-type": "application/json",
      "retry-after": "60",
      "x-sentry-rate-limits": "60:error;transaction:organization",
      "x-content-type-options": "nosniff",
      "cache-control": "no-cache",
    });
  });

  it.each([
    ["application/json", "application/json"],
    ["application/json; charset=utf-8", "application/json; charset=utf-8"],
    ["text/plain", "text/plain"],
    ["text/html; charset=utf-8", "text/plain; charset=utf-8"],
    ["application/javascript", "text/plain; charset=utf-8"],
    ["image/svg+xml", "text/plain; charset=utf-8"],
    ["application/xhtml+xml", "text/plain; charset=utf-8"],
    ["TEXT/HTML", "text/plain; charset=utf-8"],
  ])("serves an answer of type %s as %s", (type, served) => {
    expect(returnedResponseHeaders(new Headers({ "content-type": type }), true)["content-type"]).toBe(served);
  });

  it("names no type for an answer served without its body", () => {
    const upstream = new Headers({ "content-type": "application/json", "x-sentry-rate-limits": "60::organization" });
    expect(returnedResponseHeaders(upstream, false)).toEqual({
      "x-sentry-rate-limits": "60::organization",
      "x-content-type-options": "nosniff",
      "cache-control": "no-cache",
    });
  });
});
