import type { SentryConfig } from "../config.server";
import { RELEASE } from "../release.generated";

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
    };

export function monitoringSummary(sentry: SentryConfig): MonitoringSummary {
  const { project } = sentry;
  if (!project) return { configured: false };
  return {
    configured: true,
    project: project.projectId,
    org: project.org ?? null,
    region: project.region ?? null,
    environment: sentry.environment,
    release: RELEASE,
  };
}
