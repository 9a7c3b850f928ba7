/** Failures in a row after which the live forward is skipped: a slow client's body is not Sentry's failure (`deliver.ts`). */
const LIVE_FAILURES_TO_OPEN = 3;
/** How long it is skipped before one request probes Sentry again. */
const COOL_DOWN_MS = 30_000;

/** How a breaker opens, and how often it probes once open. */
interface BreakerPolicy {
  failuresToOpen: number;
  coolDownMs: number;
}

const LIVE: BreakerPolicy = { failuresToOpen: LIVE_FAILURES_TO_OPEN, coolDownMs: COOL_DOWN_MS };

/**
 * A circuit breaker over one upstream, per isolate. After {@link LIVE_FAILURES_TO_OPEN} failures in a
 * row (Sentry's fate `unavailable`: unreachable, too slow, or a 5xx), envelopes skip the live forward for
 * {@link COOL_DOWN_MS} and go straight to the spool, streamed bodies included; then one request
 * probes Sentry, and one success closes the breaker.
 */
export class UpstreamBreaker {
  readonly #failuresToOpen: number;
  readonly #coolDownMs: number;
  /** A breaker over the same upstream that learns of each success here (the spool consumer's, the live path's). */
  #partner: UpstreamBreaker | undefined;
  #failures = 0;
  #openUntil = 0;
  /** When the current run of failures began. */
  #failingSince = 0;
  readonly #now: () => number;

  /** The spool's consumer, whose bodies are whole in hand, takes one failure for Sentry's, and probes as often as it retries. */
  constructor(now: () => number = Date.now, { failuresToOpen, coolDownMs }: BreakerPolicy = LIVE) {
    this.#now = now;
    this.#failuresToOpen = failuresToOpen;
    this.#coolDownMs = coolDownMs;
  }

  /** Tells `partner` of every success here, and this one of the partner's: Sentry back for one is back for both. */
  pairWith(partner: UpstreamBreaker): void {
    this.#partner = partner;
    partner.#partner = this;
  }

  /** Whether this request should try Sentry. While open, one request per cool-down is let through as a probe. */
  allows(): boolean {
    const now = this.#now();
    if (this.#failures < this.#failuresToOpen || now >= this.#openUntil) {
      if (this.#failures >= this.#failuresToOpen) this.#openUntil = now + this.#coolDownMs;
      return true;
    }
    return false;
  }

  /** How long Sentry has been failing, as this isolate has seen it: 0 while the breaker is closed. */
  failingForMs(): number {
    return this.#failures >= this.#failuresToOpen ? this.#now() - this.#failingSince : 0;
  }

  succeeded(): void {
    this.#failures = 0;
    if (this.#partner) this.#partner.#failures = 0;
  }

  failed(): void {
    if (this.#failures === 0) this.#failingSince = this.#now();
    this.#failures += 1;
    if (this.#failures >= this.#failuresToOpen) this.#openUntil = this.#now() + this.#coolDownMs;
  }
}
