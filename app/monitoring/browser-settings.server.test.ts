import { describe, expect, it } from "vitest";

import { createTunnel, optionsFromEnv, type TunnelEnv } from "@edge-monitoring/tunnel";

import { readConfig } from "../config.server";

/** The app's config and a tunnel of the same variables. */
function configured(env: TunnelEnv & Parameters<typeof readConfig>[0]) {
  return { config: readConfig(env), tunnel: createTunnel(optionsFromEnv({ ...env, TUNNEL_RATE_LIMITING: "off" })) };
}
import { browserMonitoringSettings } from "./browser-settings.server";

describe("browserMonitoringSettings", () => {
  it("hands the page the original URL, with its query, when the operator chose it", () => {
    const { config, tunnel } = configured({ SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21", TUNNEL_ROUTE: "/monitoring" });
    expect(browserMonitoringSettings(config.sentry, tunnel)?.tunnel).toBe("/monitoring?o=11&p=21&r=us");
  });

  it("starts no browser SDK without a DSN", () => {
    const { config, tunnel } = configured({});
    expect(browserMonitoringSettings(config.sentry, tunnel)).toBeNull();
  });

  it("hands the browser the public DSN, the tunnel and the Worker's own settings", () => {
    const { config, tunnel } = configured({
      SENTRY_DSN: "https://k@o11.ingest.us.sentry.io/21",
      SENTRY_ENVIRONMENT: "staging",
      SENTRY_TRACES_SAMPLE_RATE: "0.5",
      SENTRY_TRACE_PROPAGATION_TARGETS: "https://api.example.com",
    });
    expect(browserMonitoringSettings(config.sentry, tunnel)).toMatchObject({
      dsn: "https://k@o11.ingest.us.sentry.io/21",
      tunnel: tunnel.describe().routes_served[0],
      environment: "staging",
      tracesSampleRate: 0.5,
      tracePropagationOrigins: ["https://api.example.com"],
    });
  });
});
