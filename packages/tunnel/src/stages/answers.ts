import type { UpstreamAnswer } from "../upstream/forward.ts";
import { returnedResponseHeaders, TUNNEL_RESPONSE_HEADERS } from "../upstream/header-policy.ts";

/**
 * Every answer the tunnel gives on its own account, rather than passing on Sentry's: its status,
 * the log's outcome, and a sentence for the client. The codes are stable: operators filter logs on
 * them and the README lists them.
 */
export const TUNNEL_ANSWERS = {
  spooled: [202, "spooled", "Sentry could not take the envelope just now; it is stored and will be delivered."],
  rate_limited: [429, "rejected", "Too many envelopes from this client; wait as Retry-After says."],
  not_found: [404, "rejected", "The tunnel serves nothing at this path."],
  method_not_allowed: [405, "rejected", "Only POST is accepted: send the envelope as the request body."],
  invalid_query: [400, "rejected", "The query must be o=<org id>&p=<project id>[&r=<region>], digits for o and p and two letters for r."],
  sentry_rate_limited: [429, "rejected", "Sentry is rate-limiting this DSN; wait as Retry-After says."],
  origin_not_allowed: [403, "rejected", "This origin may not use the tunnel."],
  envelope_too_large: [413, "rejected", "The envelope is larger than this tunnel takes."],
  unsupported_encoding: [415, "rejected", "The tunnel cannot read this Content-Encoding; send the envelope uncompressed."],
  report_unsupported_type: [415, "rejected", "A security report must be application/csp-report or application/reports+json."],
  report_invalid: [400, "rejected", "The body is not a Content-Security-Policy violation report."],
  empty_envelope: [400, "rejected", "The body is empty; an envelope starts with a JSON header line."],
  header_too_long: [400, "rejected", "No newline within the first 64 KiB: the envelope header line is missing or too long."],
  bad_compression: [400, "rejected", "The body could not be decompressed with the declared Content-Encoding."],
  header_not_json: [400, "rejected", "The envelope header line is not a JSON object."],
  header_repeated_key: [400, "rejected", "The envelope header line names a key twice."],
  dsn_missing: [400, "rejected", "The envelope header has no \"dsn\" string."],
  dsn_invalid: [400, "rejected", "The envelope header's \"dsn\" is not a Sentry DSN."],
  dsn_not_allowed: [403, "rejected", "The envelope's DSN is not one this tunnel forwards for."],
  query_not_allowed: [403, "rejected", "The query's org, project and region name no project this tunnel forwards for."],
  body_incomplete: [400, "rejected", "The body ended before its declared length, or the client went away."],
  body_timeout: [408, "rejected", "The body did not arrive within the tunnel's timeout."],
  spool_full: [503, "failed", "Sentry is failing, and this client has stored all the spool takes from it for now; send it again after Retry-After."],
  spool_unavailable: [503, "failed", "Sentry is failing, and the envelope could not be stored; send it again later."],
  not_kept_in_hand: [503, "failed", "Sentry failed under an envelope larger than the spool can keep just now, so it could not be stored; send it again later."],
  sentry_unavailable: [503, "failed", "Sentry is failing just now, so the report was not sent; it is counted as dropped."],
  upstream_redirect: [502, "failed", "Sentry answered with a redirect, which the tunnel does not follow."],
  upstream_unreachable: [502, "failed", "Sentry could not be reached."],
  upstream_timeout: [504, "failed", "Sentry did not answer in time."],
  internal_error: [500, "failed", "The tunnel failed on its own account; the failure has been reported."],
} as const satisfies Record<string, readonly [number, "spooled" | "rejected" | "failed", string]>;

/** The reason code of one of the tunnel's own answers: its JSON's `reason`, and its log line's. */
export type TunnelAnswerCode = keyof typeof TUNNEL_ANSWERS;

/** How a request ended, in the log line's words: Sentry answered, a partner's preflight, or one of the codes above. */
export type TunnelOutcome = "forwarded" | "preflight" | (typeof TUNNEL_ANSWERS)[TunnelAnswerCode][1];

/** The tunnel's answer to one request, with its log line's outcome and reason. */
export interface Answer {
  response: Response;
  /** The tunnel's own code; `null` when the answer is Sentry's or a preflight's. */
  code: TunnelAnswerCode | null;
  outcome: TunnelOutcome;
  /** On a `spool_unavailable`: the spool's binding that failed or did not answer, as the operator calls it. */
  binding?: string;
}

/** One of the tunnel's own answers, as JSON with its code and sentence (`sentence` says it of this request). */
export function tunnelAnswer(code: TunnelAnswerCode, extraHeaders?: Record<string, string>, sentence: string = TUNNEL_ANSWERS[code][2]): Answer {
  const [status, outcome] = TUNNEL_ANSWERS[code];
  const headers = new Headers({ ...TUNNEL_RESPONSE_HEADERS, "content-type": "application/json", ...extraHeaders });
  const body = status < 400 ? { message: sentence, reason: code } : { error: sentence, reason: code };
  return { response: new Response(JSON.stringify(body), { status, headers }), code, outcome };
}

/**
 * Sentry's answer, passed on with only the headers the client may see, and the body of a refusal.
 * A 2xx's body, which only echoes the event's id, is not read (decision 026): the client gets `{}`,
 * because Chromium's network panel marks a post whose empty answer the page never reads as failed.
 */
export function sentryAnswer(answer: UpstreamAnswer): Answer {
  const headers = returnedResponseHeaders(answer.headers, answer.body !== null);
  // 204 and 205 may not have a body at all.
  const done = answer.body === null && answer.status < 300 && answer.status !== 204 && answer.status !== 205;
  if (done) headers["content-type"] = "application/json";
  const response = new Response(done ? "{}" : answer.body, { status: answer.status, headers });
  return { response, code: null, outcome: "forwarded" };
}
