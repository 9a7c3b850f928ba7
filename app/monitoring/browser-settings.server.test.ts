import { describe, expect, it } from "vitest";

import { readConfig } from "../config.server";
import { browserMonitoringSettings } from "./browser-settings.server";

describe("browserMonitoringSettings", () => {
  it("hands the page the original URL, with its query, when the operator chose it", () => {
    const config = readConfig({ SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21", TUNNEL_ROUTE: "/monitoring" });
    expect(browserMonitoringSettings(config.sentry, config.tunnel)?.tunnel).toBe("/monitoring?o=11&p=21&r=us");
  });

  it("starts no browser SDK without a DSN", () => {
    const config = readConfig({});
    expect(browserMonitoringSettings(config.sentry, config.tunnel)).toBeNull();
  });

  it("hands the browser the public DSN, the tunnel and the Worker's own settings", () => {
    const config = readConfig({
      SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21",
      SENTRY_ENVIRONMENT: "staging",
      SENTRY_TRACES_SAMPLE_RATE: "0.5",
      SENTRY_TRACE_PROPAGATION_TARGETS: "https://api.example.com",
    });
    expect(browserMonitoringSettings(config.sentry, config.tunnel)).toMatchObject({
      dsn: "https://k@o11.ingest.us.sentry.io/21",
      tunnel: config.tunnel.route,
      environment: "staging",
      tracesSampleRate: 0.5,
      tracePropagationOrigins: ["https://api.example.com"],
    });
  });
});
