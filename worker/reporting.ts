import type { CloudflareOptions } from "@sentry/cloudflare";

import type { AppConfig } from "../app/config.server";
import { workerSentryOptions, type ReportGate } from "./sentry-options";
import { RepeatedLines, type ClientShare } from "@edge-monitoring/tunnel";

/** How the Worker reports: its SDK's settings, and whether a request's client may have it report once more. */
export interface WorkerReporting {
  /** A fresh copy per call: the SDK may keep what it is given. */
  options(): CloudflareOptions;
  clientMayReport(request: Request): Promise<boolean>;
}

/** Why the Worker did not send a report it made. */
type DropReason = "client_share" | "other_site";

/** The line an operator reads for what was dropped; never the address. */
interface DroppedLine {
  event: "report_dropped";
  reason: DropReason;
  category: "error" | "transaction";
}

/** The discard reason Sentry's Stats page shows for each. */
const DISCARD_REASONS = { client_share: "ratelimit_backoff", other_site: "before_send" } as const;

/**
 * One rule for everything the Worker's own SDK sends on behalf of a request (decisions 017 and
 * 028): a report of the visitor's own request asks the tunnel's per-client limiter, so that no
 * client has the Worker report more than its share, whatever it sends; a report of a request
 * another site's page made the browser send is not sent at all, so that such a page can neither
 * spend a visitor's share nor have us report on its account. What is dropped is counted where the
 * operator looks: a log line, at most one per client, reason and window, carrying the count, and a
 * client report in the app's own project, for Sentry's Stats.
 */
export function workerReporting(config: AppConfig, { allows: clientAllowed, reports, periodSeconds }: ClientShare): WorkerReporting {
  const ownDsn = config.sentry.dsn;
  const dropped = new RepeatedLines<DroppedLine>(periodSeconds, (line) => console.log(JSON.stringify(line)));
  const drop = (address: string | null, reason: DropReason, category: DroppedLine["category"]) => {
    dropped.say(address, `${reason} ${category}`, { event: "report_dropped", reason, category });
    if (ownDsn) reports.count(ownDsn, DISCARD_REASONS[reason], [category]);
    return false;
  };
  const gate: ReportGate = {
    async admits({ address, byAnotherSite }, category) {
      if (byAnotherSite) return drop(address, "other_site", category);
      if (!(await clientAllowed(address))) return drop(address, "client_share", category);
      // What earlier windows held is written once a later one has begun, with any report.
      dropped.flush();
      return true;
    },
  };
  return {
    options: () => workerSentryOptions(config, gate),
    clientMayReport: (request) => clientAllowed(request.headers.get("cf-connecting-ip")),
  };
}
