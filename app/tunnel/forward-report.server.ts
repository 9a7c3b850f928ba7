import type { ReportTarget } from "./admit.server";
import { sentryAnswer, tunnelAnswer } from "./answers.server";
import type { Delivered } from "./deliver.server";
import { readSecurityReport } from "./request/security-report.server";
import type { Deadline } from "./shared/deadline.server";
import { forwardWhole } from "./upstream/forward.server";
import { upstreamRequestHeaders } from "./upstream/header-policy.server";

/**
 * The stage for a CSP report, to the app's own project's security endpoint: the destination is the
 * Worker's, never the client's, and the report is bounded, checked and sent as it came. Not
 * spooled: a browser sends a report once, and one lost while Sentry is down costs less than
 * storing junk.
 */
export async function forwardSecurityReport(
  request: Request,
  deadline: Deadline,
  target: ReportTarget,
  fetch: typeof globalThis.fetch | undefined,
): Promise<Delivered> {
  const read = await readSecurityReport(request, deadline);
  if (!read.ok) return { answer: tunnelAnswer(read.reason), bytes: undefined, upstreamStatus: null };
  const bytes = read.body.byteLength;
  const headers = { ...upstreamRequestHeaders(request.headers, "identity", undefined), "content-type": read.mediaType };
  const forwarded = await forwardWhole({ url: target.url, headers, body: read.body, deadline, fetch });
  if (!forwarded.ok) return { answer: tunnelAnswer(forwarded.reason), bytes, upstreamStatus: null };
  return { answer: sentryAnswer(forwarded.answer), bytes, upstreamStatus: forwarded.answer.status };
}
