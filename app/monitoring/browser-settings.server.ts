import type { SentryConfig } from "../config.server";
import { RELEASE } from "../release.generated";
import type { TunnelWorker } from "@edge-monitoring/tunnel";
import type { BrowserMonitoringSettings } from "./browser-options";

/**
 * `null` when monitoring is not configured: the page then starts no SDK at all. The tunnel URL is
 * the tunnel's own answer for the app's DSN: its route, with the query on the original `/monitoring`.
 */
export function browserMonitoringSettings(sentry: SentryConfig, tunnel: Pick<TunnelWorker, "pageUrl">): BrowserMonitoringSettings | null {
  const tunnelUrl = tunnel.pageUrl(sentry.dsn);
  if (!sentry.dsn || !tunnelUrl) return null;
  return {
    dsn: sentry.dsn,
    tunnel: tunnelUrl,
    release: RELEASE,
    environment: sentry.environment,
    tracesSampleRate: sentry.tracesSampleRate,
    tracePropagationOrigins: sentry.tracePropagationTargets,
  };
}
