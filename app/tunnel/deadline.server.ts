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

/** Where an exchange was when it ended early. */
export type Phase = "receiving" | "forwarding" | "answering";

/** How far the client's body had got when the exchange ended. */
interface BodyProgress {
  /** Every byte had been handed on. */
  complete: boolean;
  /** It grew past the maximum. */
  tooLarge: boolean;
}

export type EarlyEnd = "body_timeout" | "body_incomplete" | "envelope_too_large" | "upstream_timeout" | "upstream_unreachable";

/**
 * The one place that says whose fault an early end was. Read it as soon as the failure is seen:
 * a failed upstream request also fails its body's pipe afterwards, which must not then be taken
 * for the client's fault.
 */
export function earlyEnd(phase: Phase, deadline: Deadline, body: BodyProgress = { complete: false, tooLarge: false }): EarlyEnd {
  const cut = deadline.signal.aborted && !deadline.passed;
  switch (phase) {
    case "receiving":
      return deadline.passed ? "body_timeout" : "body_incomplete";
    case "forwarding":
      if (deadline.passed) return body.complete ? "upstream_timeout" : "body_timeout";
      if (cut) return body.tooLarge ? "envelope_too_large" : "body_incomplete";
      return "upstream_unreachable";
    case "answering":
      return deadline.passed ? "upstream_timeout" : "upstream_unreachable";
  }
}
