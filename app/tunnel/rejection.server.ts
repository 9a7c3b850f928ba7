/**
 * Every answer the tunnel gives on its own account, rather than passing on Sentry's. The codes are
 * stable: operators filter logs on them and the README lists them.
 */
export const REJECTIONS = {
  method_not_allowed: [405, "Only POST is accepted: send the envelope as the request body."],
  invalid_query: [400, "The query must be o=<org id>&p=<project id>[&r=<region>], digits for o and p and two letters for r."],
  origin_not_allowed: [403, "This origin may not use the tunnel; add it to TUNNEL_ALLOWED_ORIGINS."],
  rate_limited: [429, "Too many envelopes from this client; wait as Retry-After says."],
  envelope_too_large: [413, "The envelope is larger than TUNNEL_MAX_ENVELOPE_BYTES allows."],
  unsupported_encoding: [415, "Content-Encoding must be gzip, deflate or none."],
  empty_envelope: [400, "The body is empty; an envelope starts with a JSON header line."],
  header_too_long: [400, "No newline within the first 64 KiB: the envelope header line is missing or too long."],
  bad_compression: [400, "The body could not be decompressed with the declared Content-Encoding."],
  header_not_json: [400, "The envelope header line is not a JSON object."],
  dsn_missing: [400, "The envelope header has no \"dsn\" string."],
  dsn_invalid: [400, "The envelope header's \"dsn\" is not a valid Sentry DSN."],
  dsn_not_allowed: [403, "The envelope's DSN is not one this tunnel forwards for."],
  query_mismatch: [403, "The query's org, project or region does not match the envelope's DSN."],
  body_incomplete: [400, "The body ended before its declared length, or the client went away."],
  body_timeout: [408, "The body did not arrive within the tunnel's timeout."],
  upstream_redirect: [502, "Sentry answered with a redirect, which the tunnel does not follow."],
  upstream_unreachable: [502, "Sentry could not be reached."],
  upstream_timeout: [504, "Sentry did not answer in time."],
  internal_error: [500, "The tunnel failed on its own account; the failure has been reported."],
} as const satisfies Record<string, readonly [number, string]>;

export type RejectionReason = keyof typeof REJECTIONS;

export function rejectionResponse(reason: RejectionReason, extraHeaders?: Record<string, string>): Response {
  const [status, error] = REJECTIONS[reason];
  const headers = new Headers({ "content-type": "application/json", "cache-control": "no-store", ...extraHeaders });
  if (reason === "method_not_allowed") headers.set("allow", "POST");
  return new Response(JSON.stringify({ error, reason }), { status, headers });
}
