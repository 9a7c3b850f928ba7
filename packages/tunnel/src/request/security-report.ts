import { readUpTo, utf8Bytes } from "../shared/body.ts";
import type { Deadline } from "../shared/deadline.ts";

/** A browser's report is a few hundred bytes; a batch of the Reporting API a few KiB. */
const MAX_SECURITY_REPORT_BYTES = 32 * 1024;

/** `report-uri` sends the first, the Reporting API (`report-to`) the second; Sentry takes both. */
const REPORT_MEDIA_TYPES = new Set(["application/csp-report", "application/reports+json"]);

export type SecurityReportRead =
  | { ok: true; body: Uint8Array<ArrayBuffer>; mediaType: string }
  | { ok: false; reason: "report_unsupported_type" | "envelope_too_large" | "report_invalid" | "body_timeout" | "body_incomplete" };

/**
 * Reads a report whole, at most {@link MAX_SECURITY_REPORT_BYTES}, within the deadline, and keeps
 * it only if it is a CSP violation report in one of the two formats browsers send.
 */
export async function readSecurityReport(request: Request, deadline: Deadline): Promise<SecurityReportRead> {
  const mediaType = (request.headers.get("content-type") ?? "").split(";", 1)[0]!.trim().toLowerCase();
  if (!REPORT_MEDIA_TYPES.has(mediaType)) return { ok: false, reason: "report_unsupported_type" };
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > MAX_SECURITY_REPORT_BYTES) return { ok: false, reason: "envelope_too_large" };
  if (!request.body) return { ok: false, reason: "report_invalid" };

  let body: Uint8Array<ArrayBuffer> | undefined;
  try {
    body = await readUpTo(request.body, MAX_SECURITY_REPORT_BYTES, (read) => deadline.race(read));
  } catch {
    return { ok: false, reason: deadline.state === "passed" ? "body_timeout" : "body_incomplete" };
  }
  if (!body) return { ok: false, reason: "envelope_too_large" };
  const report = violationReport(body, mediaType);
  return report ? { ok: true, body: report, mediaType } : { ok: false, reason: "report_invalid" };
}

/**
 * `{"csp-report": {…}}` for `report-uri`, as it came; for the Reporting API, a non-empty list of
 * `csp-violation` reports, of which only the first goes on. Sentry makes an event of each report
 * in a list, and 32 KiB holds some 900: one request, which counts once against its client's limit,
 * is one event (a browser sends `report-uri` reports one by one anyway).
 */
function violationReport(body: Uint8Array<ArrayBuffer>, mediaType: string): Uint8Array<ArrayBuffer> | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(body));
  } catch {
    return undefined;
  }
  if (mediaType === "application/csp-report") return isObject(parsed) && isObject(parsed["csp-report"]) ? body : undefined;
  if (!Array.isArray(parsed) || parsed.length === 0) return undefined;
  if (!parsed.every((report: unknown) => isObject(report) && report["type"] === "csp-violation" && isObject(report["body"]))) return undefined;
  return parsed.length === 1 ? body : utf8Bytes(JSON.stringify(parsed.slice(0, 1)));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
