import type { ForwardFailure } from "./forward.ts";

/**
 * What Sentry's answer to an envelope means, one rule for the live path and the spool alike:
 * - `delivered`: a 2xx, Sentry took it;
 * - `rate_limited`: a 429, Sentry's "not yet": the live path passes it on, so that the SDK backs
 *   off, and the spool tries again when the limit ends;
 * - `unavailable`: a 5xx, no answer in time, or no connection: "not now", so the live path stores
 *   the envelope and the spool tries it again later, and the breaker counts it;
 * - `refused`: anything else, a 4xx or a redirect (never followed): Sentry saw it and said no, and
 *   sending it again would not help.
 *
 * Every 5xx is "not now", 501 and 505 included: one from Sentry itself would be a bug of the day,
 * and one from a proxy in front of it an outage; storing such an envelope costs a retry, while
 * dropping it loses it.
 */
export type SentryFate = "delivered" | "rate_limited" | "unavailable" | "refused";

/** The fate of an envelope Sentry answered. */
export function fateOfStatus(status: number): SentryFate {
  if (status >= 200 && status < 300) return "delivered";
  if (status === 429) return "rate_limited";
  if (status >= 500) return "unavailable";
  return "refused";
}

/**
 * The fate of an envelope Sentry did not answer: a redirect is a refusal, no connection or no
 * answer in time is "not now"; and when the client's body failed, Sentry was never asked to decide.
 */
export function fateOfFailure(reason: ForwardFailure): "refused" | "unavailable" | "client_failed" {
  switch (reason) {
    case "upstream_redirect":
      return "refused";
    case "upstream_unreachable":
    case "upstream_timeout":
      return "unavailable";
    case "body_timeout":
    case "body_incomplete":
    case "envelope_too_large":
      return "client_failed";
  }
}
