import type { SentryConfig } from "../config.server";
import { RELEASE } from "../release.generated";
import { TUNNEL_PATH, type ProjectIdentity } from "../tunnel";
import type { BrowserMonitoringSettings } from "./browser-options";

/** The tunnel path for a DSN: `o` and `r` for Sentry SaaS, only `p` for a self-hosted DSN. */
export function tunnelPathFor(project: ProjectIdentity): string {
  const query = new URLSearchParams();
  if (project.org) query.set("o", project.org);
  query.set("p", project.projectId);
  if (project.region) query.set("r", project.region);
  return `${TUNNEL_PATH}?${query}`;
}

/**
 * `null` when monitoring is not configured: the page then starts no SDK at all. `route` is the
 * tunnel's: the page posts there, with no query, unless it is the original `/monitoring`.
 */
export function browserMonitoringSettings(sentry: SentryConfig, route: string): BrowserMonitoringSettings | null {
  if (!sentry.dsn || !sentry.project) return null;
  return {
    dsn: sentry.dsn,
    tunnel: route === TUNNEL_PATH ? tunnelPathFor(sentry.project) : route,
    release: RELEASE,
    environment: sentry.environment,
    tracesSampleRate: sentry.tracesSampleRate,
    tracePropagationOrigins: sentry.tracePropagationTargets,
  };
}
