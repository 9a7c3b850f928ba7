import type { ReportTarget } from "./admit.ts";
import { sentryAnswer, tunnelAnswer, type Answer } from "./answers.ts";
import type { Delivery } from "./deliver.ts";
import type { Delivered } from "./shipment.ts";
import { readSecurityReport } from "../request/security-report.ts";
import type { Deadline } from "../shared/deadline.ts";
import { SECURITY_CATEGORY, type DiscardReason } from "../upstream/client-reports.ts";
import { fateOfFailure, fateOfStatus } from "../upstream/fate.ts";
import { forwardWhole } from "../upstream/forward.ts";
import { upstreamRequestHeaders } from "../upstream/header-policy.ts";
import type { UpstreamState } from "../upstream/state.ts";

/** The envelope item type Sentry files a CSP report under, and so the one its rate limits name (`security`). */
const REPORT_ITEM_TYPES = ["raw_security"] as const;

/**
 * The stage for a CSP report, to the app's own project's security endpoint: the destination is the
 * Worker's, never the client's, and the report is bounded, checked and sent as it came. It is held
 * where an envelope for that project would be: while Sentry rate-limits the project's reports, and
 * while the breaker of its ingest is open, it is not sent, and is counted as dropped in the
 * project's client reports. Not spooled: a browser sends a report once, and one lost while Sentry
 * is down costs less than storing junk.
 */
export async function forwardSecurityReport(
  request: Request,
  deadline: Deadline,
  target: ReportTarget,
  delivery: Delivery,
  { limits, breakers }: UpstreamState,
): Promise<Delivered> {
  const read = await readSecurityReport(request, deadline);
  if (!read.ok) return { answer: tunnelAnswer(read.reason), bytes: undefined, upstreamStatus: null };
  const bytes = read.body.byteLength;
  const dropped = (reason: DiscardReason, answer: Answer, upstreamStatus: number | null = null): Delivered => {
    delivery.reports.count(target.dsn, reason, [SECURITY_CATEGORY]);
    return { answer, bytes, upstreamStatus };
  };

  const sentrySaidNo = limits.refusal(target.dsn, () => REPORT_ITEM_TYPES);
  if (sentrySaidNo) return dropped("ratelimit_backoff", tunnelAnswer("sentry_rate_limited", sentrySaidNo));
  const breaker = breakers.get(target.upstreamUrl)!;
  if (!breaker.allows()) return dropped("network_error", tunnelAnswer("sentry_unavailable"));

  const headers = { ...upstreamRequestHeaders(request.headers, "identity", undefined), "content-type": read.mediaType };
  const forwarded = await forwardWhole({ url: target.url, headers, body: read.body, deadline, fetch: delivery.fetch });
  if (!forwarded.ok) {
    if (fateOfFailure(forwarded.reason) !== "unavailable") return dropped("send_error", tunnelAnswer(forwarded.reason));
    breaker.failed();
    return dropped("network_error", tunnelAnswer(forwarded.reason));
  }
  const { answer } = forwarded;
  limits.record(target.dsn, answer.status, answer.headers);
  if (fateOfStatus(answer.status) !== "unavailable") {
    breaker.succeeded();
    // Sentry counts what it refuses or rate-limits itself: only what it never saw is ours to count.
    return { answer: sentryAnswer(answer), bytes, upstreamStatus: answer.status };
  }
  breaker.failed();
  return dropped("network_error", sentryAnswer(answer), answer.status);
}
