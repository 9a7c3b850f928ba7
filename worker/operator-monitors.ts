// The Sentry monitors that tell an operator the tunnel stopped delivering without anyone looking:
// the Worker's Cron Trigger checks in to the spool's cron monitor, `npm run monitors` creates it and
// the uptime probe. The ad-block lists' monitor is the scheduled workflow's (.github/workflows/blockers.yml).
import { createClientReportEnvelope, serializeEnvelope, type MonitorConfig } from "@sentry/core";

/** The cron monitor the spool's heartbeat (the Worker's Cron Trigger) checks in to. */
export const SPOOL_MONITOR_SLUG = "tunnel-spool";

/**
 * Its settings, for a trigger on `cron` (UTC, as Cloudflare runs them): a missed run alerts after
 * 5 minutes' grace, and one `error` opens an issue, one `ok` resolves it.
 */
export function spoolMonitorConfig(cron: string): MonitorConfig {
  return { schedule: { type: "crontab", value: cron }, checkinMargin: 5, maxRuntime: 1, timezone: "Etc/UTC", failureIssueThreshold: 1, recoveryThreshold: 1 };
}

/**
 * The uptime monitor's name: `npm run monitors` finds it again by this, through the API's search,
 * which reads a word with a colon as a filter: so none here.
 */
export const PROBE_MONITOR_NAME = "Tunnel envelope through the route";

/**
 * What the uptime probe posts through the tunnel's route: an envelope for `dsn` holding only an
 * empty client report, which Sentry takes with a 2xx and makes no event of. The route, the tunnel's
 * checks and Sentry's ingest are all on its way, so a 2xx means the whole path delivers.
 */
export function probeEnvelope(dsn: string): string {
  const body = serializeEnvelope(createClientReportEnvelope([], dsn));
  return typeof body === "string" ? body : new TextDecoder().decode(body);
}
