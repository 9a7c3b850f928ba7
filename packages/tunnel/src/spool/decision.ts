import type { DiscardReason } from "../upstream/client-reports.ts";

/** Relay's own `max_envelope_delay`: an envelope is delivered within this, or given up at it. */
export const MAX_ENVELOPE_AGE_MS = 24 * 60 * 60 * 1000;
/** The longest wait between two tries, whatever the try. */
export const MAX_BACKOFF_SECONDS = 60 * 60;

/** What one delivery of a stored envelope came to. */
export type AttemptResult =
  /** Sentry took it. */
  | { kind: "delivered"; status: number }
  /** Sentry saw it and said no (4xx but 429), or redirected: sending it again would not help. */
  | { kind: "refused"; status: number | null }
  /** Sentry's rate limit: its own 429 (`status`), or the edge's memory of one (`status: null`, Sentry not called). */
  | { kind: "rate_limited"; status: number | null; retryAfterSeconds: number }
  /** Sentry could not take it now: a 5xx, no answer, or not reached (`upstream/fate.ts`). */
  | { kind: "unavailable"; status: number | null };

/** What the consumer does with the message, and what its log line says. */
export type SpoolVerdict =
  | { action: "ack"; outcome: "delivered" }
  | { action: "drop"; outcome: "dropped" | "expired"; discard: DiscardReason | undefined }
  /** `deferred`: held while Sentry is known to be down, without asking it. */
  | { action: "retry"; outcome: "retried" | "deferred"; delaySeconds: number; tries: number };

export interface RetryPolicy {
  /** The first retry's delay; each further try waits twice as long, up to an hour. */
  spoolRetrySeconds: number;
}

/**
 * The spool's whole rule, as a pure function of one attempt's result, the tries Sentry has failed
 * so far (`tries`, before this one), and the envelope's age:
 * - delivered: acknowledged;
 * - refused: dropped (Sentry saw it, and counts it in its own outcomes);
 * - rate-limited: tried again when the limit ends, and that costs no try;
 * - unavailable: tried again after an exponential backoff with jitter, counted as a try.
 *
 * No retry is ever due after the envelope's 24 hours: the last one is moved to just before, and
 * an envelope with no time left is given up as expired. Nothing else gives up on an envelope: no
 * count of tries does (the consumer re-sends a retried message as a new one, so the queue's own
 * `max_retries` never runs out).
 */
export function decideAfterAttempt(
  result: AttemptResult,
  tries: number,
  ageMs: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): SpoolVerdict {
  switch (result.kind) {
    case "delivered":
      return { action: "ack", outcome: "delivered" };
    case "refused":
      return { action: "drop", outcome: "dropped", discard: undefined };
    case "rate_limited":
      return retryWithin(result.retryAfterSeconds, tries, ageMs);
    case "unavailable":
      return retryWithin(backoffSeconds(tries + 1, policy, random), tries + 1, ageMs);
  }
}

/** The first `tries` is 1: `spoolRetrySeconds`, then doubling, capped at an hour, times 0.5 to 1.5. */
export function backoffSeconds(tries: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const base = Math.min(policy.spoolRetrySeconds * 2 ** Math.max(0, tries - 1), MAX_BACKOFF_SECONDS);
  return Math.max(1, Math.round(base * (0.5 + random())));
}

/**
 * While Sentry is known to be down (the breaker open), an envelope waits without Sentry being
 * asked: twice as long as the outage has lasted so far, at least `spoolRetrySeconds` and at most
 * an hour, times 0.75 to 1.25. So each envelope is read some log3(outage ÷ its age in it) times
 * however deep the backlog, and what a long outage stored comes due spread over the hour after it.
 */
export function deferWhileDown(failingForMs: number, tries: number, ageMs: number, policy: RetryPolicy, random: () => number = Math.random): SpoolVerdict {
  return retryWithin(deferralSeconds(failingForMs, policy, random), tries, ageMs, "deferred");
}

/** The wait of {@link deferWhileDown}; the live path stores an envelope with it too, while Sentry is known to be down. */
export function deferralSeconds(failingForMs: number, policy: RetryPolicy, random: () => number = Math.random): number {
  return Math.round(Math.min(Math.max(policy.spoolRetrySeconds, (2 * failingForMs) / 1000), MAX_BACKOFF_SECONDS) * (0.75 + random() / 2));
}

function retryWithin(wantedSeconds: number, tries: number, ageMs: number, outcome: "retried" | "deferred" = "retried"): SpoolVerdict {
  const leftSeconds = Math.floor((MAX_ENVELOPE_AGE_MS - ageMs) / 1000);
  if (leftSeconds < 1) return { action: "drop", outcome: "expired", discard: "network_error" };
  return { action: "retry", outcome, delaySeconds: Math.min(Math.max(1, Math.ceil(wantedSeconds)), leftSeconds), tries };
}
