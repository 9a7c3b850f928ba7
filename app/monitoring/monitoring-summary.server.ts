import { dsnFromString } from "@sentry/core";

import type { SentryConfig } from "../config.server";
import { RELEASE } from "../release.generated";
import { saasIngestOf } from "../tunnel/upstream-target.server";

/** What the home page's Monitoring panel shows: enough to recognise the project, never the DSN's key. */
export type MonitoringSummary =
  | { configured: false }
  | {
      configured: true;
      project: string;
      org: string | null;
      region: string | null;
      environment: string;
      release: string;
    };

export function monitoringSummary(sentry: SentryConfig): MonitoringSummary {
  const dsn = sentry.dsn ? dsnFromString(sentry.dsn) : undefined;
  if (!dsn) return { configured: false };
  const saas = saasIngestOf(dsn.host);
  return {
    configured: true,
    project: dsn.projectId,
    org: saas?.org ?? null,
    region: saas?.region ?? null,
    environment: sentry.environment,
    release: RELEASE,
  };
}
