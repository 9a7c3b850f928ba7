import { captureCheckIn, captureMessage } from "@sentry/cloudflare";
import { watchBlockLists, watchedRequestsOf, watchMessages, type ListStore, type WatchedRequest, type WatchSettings } from "@edge-monitoring/list-watch";
import type { TunnelWorker } from "@edge-monitoring/tunnel";

import { LIST_WATCH_MONITOR_SLUG, listWatchMonitorConfig } from "./operator-monitors";

const SCRIPT_REMEDY =
  "rename the module whose chunk it is, so that the file Remix names after it no longer matches (the SDK's is app/monitoring/sdk.client.ts), and deploy";

export interface ListWatch {
  settings: WatchSettings;
  tunnel: Pick<TunnelWorker, "describe">;
  /** The paths of every script the pages can load. */
  scripts: () => Promise<string[]>;
  store: ListStore;
}

/**
 * The watch's Cron Trigger: asks the lists about everything the pages post to and load, writes
 * the `tunnel_watch` line, and tells Sentry: one message per blocking rule, or one saying why the
 * check failed, then a check-in, `ok` when clear and `error` otherwise. A run cut off before it
 * ends sends none, and Sentry reports a miss.
 */
export async function watchLists({ settings, tunnel, scripts, store }: ListWatch, cron: string): Promise<void> {
  const requests = async (): Promise<WatchedRequest[]> => [
    ...watchedRequestsOf(tunnel.describe()),
    ...(await scripts()).map((path): WatchedRequest => ({ what: "script", path, type: "script", remedy: SCRIPT_REMEDY })),
  ];
  const line = await watchBlockLists({ settings, requests, store });
  if (line.status === "failed") {
    captureMessage(`The ad-block list watch could not check the lists for ${line.host}, so it knows neither that they block nor that they do not: ${line.reason}`, {
      level: "warning",
      fingerprint: ["tunnel-watch-failed"],
    });
  }
  for (const { message, fingerprint, tags } of watchMessages(line)) captureMessage(message, { level: "error", fingerprint, tags });
  captureCheckIn({ monitorSlug: LIST_WATCH_MONITOR_SLUG, status: line.status === "clear" ? "ok" : "error" }, listWatchMonitorConfig(cron));
}
