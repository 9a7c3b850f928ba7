/**
 * One deadline per request, from its arrival to the last byte of the tunnel's answer: receiving the
 * body, forwarding it and reading Sentry's answer all race the same timer.
 *
 * One controller and one timer, cleared when the request ends, rather than a timeout signal joined
 * to an abort signal (the profiler showed those signals' listeners at some 4 % of the tunnel's CPU).
 */
export class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;
  /** The time ran out (as opposed to the body failing). */
  passed = false;

  constructor(timeoutMs: number) {
    this.timer = setTimeout(() => {
      this.passed = true;
      this.controller.abort(new DOMException("The tunnel's deadline passed", "TimeoutError"));
    }, timeoutMs);
  }

  /** Aborts when the time runs out or the exchange is {@link cut}: give it to the upstream fetch. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The body failed: end the exchange now, so the upstream request is aborted rather than completed. */
  cut(reason: unknown): void {
    this.controller.abort(reason);
  }

  /** Settles as `work` does, or rejects as soon as the exchange ends first. */
  race<T>(work: Promise<T>): Promise<T> {
    const { signal } = this;
    return new Promise((resolve, reject) => {
      const expire = () => reject(signal.reason);
      if (signal.aborted) return expire();
      signal.addEventListener("abort", expire, { once: true });
      work.then(resolve, reject).finally(() => signal.removeEventListener("abort", expire));
    });
  }

  end(): void {
    clearTimeout(this.timer);
  }
}
