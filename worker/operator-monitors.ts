// The Sentry monitors that tell an operator the tunnel stopped delivering without anyone looking:
// the Worker's two Cron Triggers check in to the cron monitors, `npm run monitors` creates the
// spool's and the uptime probe.
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

/** The cron monitor the ad-block list watch (`TUNNEL_WATCH=on`) checks in to. */
export const LIST_WATCH_MONITOR_SLUG = "tunnel-blocklists";

/**
 * The watch's Cron Trigger in `wrangler.toml`, by which `scheduled()` tells it from the spool's
 * heartbeat (a test holds the two equal): every 6 hours, at a minute the heartbeat never runs and
 * off the hour, when list servers are busiest.
 */
export const LIST_WATCH_CRON = "17 */6 * * *";

/**
 * The watch's monitor: a run fetches seven lists, so it may take minutes; a missed run alerts after
 * an hour's grace, one `error` opens an issue, and one `ok` resolves it.
 */
export function listWatchMonitorConfig(cron: string): MonitorConfig {
  return { schedule: { type: "crontab", value: cron }, checkinMargin: 60, maxRuntime: 15, timezone: "Etc/UTC", failureIssueThreshold: 1, recoveryThreshold: 1 };
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
