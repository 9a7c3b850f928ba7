/** Failures in a row after which the live forward is skipped. */
const FAILURES_TO_OPEN = 3;
/** How long it is skipped before one request probes Sentry again. */
const COOL_DOWN_MS = 30_000;

/**
 * A circuit breaker over one upstream, per isolate. After {@link FAILURES_TO_OPEN} failures in a
 * row (Sentry's fate `unavailable`: unreachable, too slow, or a 5xx), envelopes skip the live forward for
 * {@link COOL_DOWN_MS} and go straight to the spool, streamed bodies included; then one request
 * probes Sentry, and one success closes the breaker.
 */
export class UpstreamBreaker {
  #failures = 0;
  #openUntil = 0;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Whether this request should try Sentry. While open, one request per cool-down is let through as a probe. */
  allows(): boolean {
    const now = this.#now();
    if (this.#failures < FAILURES_TO_OPEN || now >= this.#openUntil) {
      if (this.#failures >= FAILURES_TO_OPEN) this.#openUntil = now + COOL_DOWN_MS;
      return true;
    }
    return false;
  }

  succeeded(): void {
    this.#failures = 0;
  }

  failed(): void {
    this.#failures += 1;
    if (this.#failures >= FAILURES_TO_OPEN) this.#openUntil = this.#now() + COOL_DOWN_MS;
  }
}
