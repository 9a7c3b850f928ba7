/**
 * One deadline per request, from its arrival to the last byte of the tunnel's answer: receiving the
 * body, forwarding it and reading Sentry's answer all race the same timer.
 *
 * One timer, cleared when the request ends. Races join one promise rather than listening on an
 * abort signal, and the signal exists only for the forwards that need one (a streamed body): the
 * A/B in `test/bench/NOTES.md` (entry 11) found a signal on every `fetch` the dearest part of the
 * deadline.
 */
export class Deadline {
  private controller: AbortController | undefined;
  private readonly timer: ReturnType<typeof setTimeout>;
  private readonly over: Promise<never>;
  private stop!: (reason: unknown) => void;
  private reason: unknown;
  /** The time ran out (as opposed to the body failing). */
  passed = false;
  /** The exchange ended early: the time ran out, or the body failed. */
  stopped = false;

  constructor(timeoutMs: number) {
    this.over = new Promise<never>((_, reject) => (this.stop = reject));
    // Rejects for every exchange cut short, raced or not: nobody has to be listening.
    this.over.catch(() => {});
    this.timer = setTimeout(() => {
      this.passed = true;
      this.cut(new DOMException("The tunnel's deadline passed", "TimeoutError"));
    }, timeoutMs);
  }

  /** Aborts when the time runs out or the exchange is {@link cut}: give it to a fetch whose body streams. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.stopped) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** The body failed: end the exchange now, so the upstream request is aborted rather than completed. */
  cut(reason: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.reason = reason;
    this.controller?.abort(reason);
    this.stop(reason);
  }

  /** Settles as `work` does, or rejects as soon as the exchange ends first. */
  race<T>(work: Promise<T>): Promise<T> {
    return Promise.race([work, this.over]);
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
  const cut = deadline.stopped && !deadline.passed;
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
