import type { SentryConfig } from "../config.server";
import { RELEASE } from "../release.generated";
import { PLACEHOLDER_DSN } from "./local-defaults";

/** What the home page's Monitoring panel shows: enough to recognise the project, never the DSN's key. */
type MonitoringSummary =
  | { configured: false }
  | {
      configured: true;
      project: string;
      org: string | null;
      region: string | null;
      environment: string;
      release: string;
      /** The DSN is the one `npm start` sets when none is configured: nothing reaches a Sentry project. */
      placeholder: boolean;
    };

export function monitoringSummary(sentry: SentryConfig): MonitoringSummary {
  const { project: query } = sentry;
  if (!query) return { configured: false };
  return {
    configured: true,
    project: query.project,
    org: query.org ?? null,
    region: query.region ?? null,
    environment: sentry.environment,
    release: RELEASE,
    placeholder: sentry.dsn === PLACEHOLDER_DSN,
  };
}
