import { describe, expect, it } from "vitest";

import { readConfig } from "../config.server";
import { browserMonitoringSettings, tunnelPathFor } from "./browser-settings.server";

describe("tunnelPathFor", () => {
  it.each([
    ["https://k@o11.ingest.us.sentry.io/21", "/monitoring?o=11&p=21&r=us"],
    ["https://k@o12.ingest.de.sentry.io/22", "/monitoring?o=12&p=22&r=de"],
    ["https://k@o13.ingest.sentry.io/23", "/monitoring?o=13&p=23"],
    ["https://k@sentry.example.com/base/24", "/monitoring?p=24"],
  ])("%s → %s", (dsn, path) => {
    expect(tunnelPathFor(readConfig({ SENTRY_DSN: dsn }).sentry.project!)).toBe(path);
  });
});

describe("browserMonitoringSettings", () => {
  it("hands the page the original URL, with its query, when the operator chose it", () => {
    const config = readConfig({ SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21", TUNNEL_ROUTE: "/monitoring" });
    expect(browserMonitoringSettings(config.sentry, config.tunnel.route)?.tunnel).toBe("/monitoring?o=11&p=21&r=us");
  });

  it("starts no browser SDK without a DSN", () => {
    const config = readConfig({});
    expect(browserMonitoringSettings(config.sentry, config.tunnel.route)).toBeNull();
  });

  it("hands the browser the public DSN, the tunnel and the Worker's own settings", () => {
    const config = readConfig({
      SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21",
      SENTRY_ENVIRONMENT: "staging",
      SENTRY_TRACES_SAMPLE_RATE: "0.5",
      SENTRY_TRACE_PROPAGATION_TARGETS: "https://api.example.com",
    });
    expect(browserMonitoringSettings(config.sentry, config.tunnel.route)).toMatchObject({
      dsn: "https://k@o11.ingest.us.sentry.io/21",
      tunnel: config.tunnel.route,
      environment: "staging",
      tracesSampleRate: 0.5,
      tracePropagationOrigins: ["https://api.example.com"],
    });
  });
});
