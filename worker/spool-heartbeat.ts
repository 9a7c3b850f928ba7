import { captureCheckIn } from "@sentry/cloudflare";

import { SPOOL_MONITOR_SLUG, spoolMonitorConfig } from "./operator-monitors";
import type { TunnelWorker } from "@edge-monitoring/tunnel";

/**
 * The Cron Trigger's work: the spool's heartbeat line and data point, and a check-in to Sentry's
 * cron monitor, created or updated by the check-in itself for the trigger's own schedule. `error`
 * when the oldest envelope has waited too long; none when the queue's count could not be read, so
 * that Sentry reports a missed check-in, as it does for every run while Sentry itself was down.
 */
export async function checkInSpool(tunnel: Pick<TunnelWorker, "spoolHeartbeat">, cron: string): Promise<void> {
  const heartbeat = await tunnel.spoolHeartbeat();
  if (!heartbeat || heartbeat.status === "unread") return;
  captureCheckIn({ monitorSlug: SPOOL_MONITOR_SLUG, status: heartbeat.status === "ok" ? "ok" : "error" }, spoolMonitorConfig(cron));
}
