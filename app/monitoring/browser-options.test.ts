import { stringMatchesSomePattern } from "@sentry/core";
import { describe, expect, it } from "vitest";

import { browserSentryOptions, originPattern, type BrowserMonitoringSettings } from "./browser-options";

const settings: BrowserMonitoringSettings = {
  dsn: "https://k@o1.ingest.us.sentry.io/2",
  tunnel: "/monitoring?o=1&p=2&r=us",
  release: "0123456789abcdef0123456789abcdef01234567",
  environment: "staging",
  tracesSampleRate: 0.25,
  tracePropagationOrigins: ["https://api.example.com"],
};

describe("browserSentryOptions", () => {
  const options = browserSentryOptions(settings, "https://app.example.com");

  it("sends through the tunnel, with the Worker's release and environment", () => {
    expect(options).toMatchObject({
      dsn: settings.dsn,
      tunnel: "/monitoring?o=1&p=2&r=us",
      release: settings.release,
      environment: "staging",
      tracesSampleRate: 0.25,
    });
  });

  it.each([
    ["https://app.example.com/api/data", true],
    ["https://app.example.com", true],
    ["https://app.example.com?x=1", true],
    ["https://api.example.com/v1/items", true],
    ["https://app.example.com.evil.test/steal", false],
    ["https://evil.test/?next=https://app.example.com/", false],
    ["http://app.example.com/insecure", false],
    ["https://app.example.com:8443/other-port", false],
  ])("propagates trace headers to %s: %s", (url, expected) => {
    expect(stringMatchesSomePattern(url, options.tracePropagationTargets ?? [])).toBe(expected);
  });
});

describe("originPattern", () => {
  it("escapes the origin's dots", () => {
    expect(originPattern("https://a.example").test("https://aXexample/")).toBe(false);
  });
});
