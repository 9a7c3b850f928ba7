import type { CloudflareOptions } from "@sentry/cloudflare";

import type { AppConfig } from "../app/config.server";
import { workerSentryOptions, type ReportGate } from "../app/monitoring/worker-options.server";
import type { TunnelWorker } from "@edge-monitoring/tunnel";

/** How the Worker reports: its SDK's settings, and whether a request's client may have it report once more. */
export interface WorkerReporting {
  /** A fresh copy per call: the SDK may keep what it is given. */
  options(): CloudflareOptions;
  clientMayReport(request: Request): Promise<boolean>;
}

/**
 * One rule for everything the Worker's own SDK sends on behalf of a request (decision 017): each
 * event and transaction asks the tunnel's own per-client limiter, so that no client has the Worker
 * report more than its share, whatever it sends. Past
 * the share the report is dropped, and counted where the operator looks: a log line, and a client
 * report in the app's own project, for Sentry's Stats.
 */
export function workerReporting(config: AppConfig, { clientAllowed, reports }: Pick<TunnelWorker, "clientAllowed" | "reports">): WorkerReporting {
  const ownDsn = config.sentry.dsn;
  const gate: ReportGate = {
    async admits(address, category) {
      if (await clientAllowed(address)) return true;
      // Never the address: the log line holds nothing that identifies the client.
      console.log(JSON.stringify({ event: "report_dropped", reason: "client_share", category }));
      if (ownDsn) reports.count(ownDsn, "ratelimit_backoff", [category]);
      return false;
    },
  };
  return {
    options: () => workerSentryOptions(config, gate),
    clientMayReport: (request) => clientAllowed(request.headers.get("cf-connecting-ip")),
  };
}
