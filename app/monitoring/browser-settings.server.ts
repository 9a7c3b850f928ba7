import { dsnFromString } from "@sentry/core";

import type { SentryConfig } from "../config.server";
import { RELEASE } from "../release.generated";
import { saasIngestOf } from "../tunnel/upstream-target.server";
import type { BrowserMonitoringSettings } from "./browser-options";

/** The tunnel path for a DSN: `o` and `r` for Sentry SaaS, only `p` for a self-hosted DSN. */
export function tunnelPathFor(dsn: string): string | undefined {
  const components = dsnFromString(dsn);
  if (!components) return undefined;
  const saas = saasIngestOf(components.host);
  const query = new URLSearchParams();
  if (saas) query.set("o", saas.org);
  query.set("p", components.projectId);
  if (saas?.region) query.set("r", saas.region);
  return `/monitoring?${query}`;
}

/** `null` when monitoring is not configured: the page then starts no SDK at all. */
export function browserMonitoringSettings(sentry: SentryConfig): BrowserMonitoringSettings | null {
  const tunnel = sentry.dsn ? tunnelPathFor(sentry.dsn) : undefined;
  if (!sentry.dsn || !tunnel) return null;
  return {
    dsn: sentry.dsn,
    tunnel,
    release: RELEASE,
    environment: sentry.environment,
    tracesSampleRate: sentry.tracesSampleRate,
    tracePropagationOrigins: sentry.tracePropagationTargets,
  };
}
