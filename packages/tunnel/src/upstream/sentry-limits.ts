import { envelopeItemTypeToDataCategory, updateRateLimits, type EnvelopeItemType, type RateLimits } from "@sentry/core";

/**
 * Sentry's "no", remembered at the edge: after a 429 for a DSN, envelopes for that DSN whose every
 * item falls in a limited category are answered 429 here until the limit expires, and Sentry is
 * not called. Per isolate, in memory: an isolate that has not seen the 429 yet asks Sentry once
 * and learns it then.
 *
 * The limits are kept per DSN, whatever their scope (organization, project or key): a DSN is one
 * key of one project of one organization, so each scope covers it.
 */
export class SentryLimits {
  readonly #byDsn = new Map<string, RateLimits>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Takes in Sentry's answer to an envelope for `dsn`; only a 429 or rate-limit headers change anything. */
  record(dsn: string, status: number, headers: Headers): void {
    const rateLimits = headers.get("x-sentry-rate-limits");
    const retryAfter = headers.get("retry-after");
    if (status !== 429 && rateLimits === null) return;
    const limits = updateRateLimits(
      this.#byDsn.get(dsn) ?? {},
      { statusCode: status, headers: { "x-sentry-rate-limits": rateLimits, "retry-after": retryAfter } },
      this.#now(),
    );
    this.#byDsn.set(dsn, limits);
  }

  /**
   * When every one of the envelope's item types is limited for `dsn`, the headers of the 429 to
   * answer with; `undefined` when the envelope may go. The item types are asked for only while a
   * limit is held for the DSN, so envelopes pay for reading them only then. Without item types (a
   * streamed body, not read), only a limit on every category applies.
   */
  refusal(dsn: string, itemTypes: () => readonly string[] | undefined): Record<string, string> | undefined {
    const limits = this.#byDsn.get(dsn);
    if (!limits) return undefined;
    const now = this.#now();
    const types = itemTypes();
    const categories = types?.length ? types.map((type) => envelopeItemTypeToDataCategory(type as EnvelopeItemType)) : ["all"];
    const until = Math.min(...categories.map((category) => expiryOf(limits, category)));
    if (until <= now) {
      if (Object.values(limits).every((expiry) => expiry <= now)) this.#byDsn.delete(dsn);
      return undefined;
    }
    const active = Object.entries(limits).filter(([, expiry]) => expiry > now);
    const header = active
      .map(([category, expiry]) => `${Math.ceil((expiry - now) / 1000)}:${category === "all" ? "" : category}:key`)
      .join(", ");
    return { "retry-after": String(Math.ceil((until - now) / 1000)), "x-sentry-rate-limits": header };
  }
}

/** Like the SDK's `disabledUntil`, but an item type from the request (`__proto__`, say) reads only own keys. */
function expiryOf(limits: RateLimits, category: string): number {
  const own = Object.hasOwn(limits, category) ? limits[category] : undefined;
  return own ?? limits["all"] ?? 0;
}
