/**
 * One deadline per request, from its arrival to the last byte of the tunnel's answer: receiving the
 * body, forwarding it and reading Sentry's answer all race the same timer.
 *
 * One timer, cleared when the request ends. Reading the body and Sentry's answer race one promise
 * rather than listening on an abort signal; the signal is made only for the upstream `fetch`, which
 * must be cancelled, not merely left behind, when the deadline passes.
 */
// Decision 010 says why one race rather than a signal.
export class Deadline {
  #controller: AbortController | undefined;
  #timer: ReturnType<typeof setTimeout>;
  #endsAt: number;
  /** What Sentry is given to answer after the body's last byte, however late that came: see {@link giveUpstreamItsShare}. */
  readonly #upstreamShareMs: number;
  readonly #over: Promise<never>;
  #stop!: (reason: unknown) => void;
  /** The share a binding's call still has once Sentry used the whole deadline: see {@link bound}. */
  #afterward: { over: Promise<never>; timer: ReturnType<typeof setTimeout> } | undefined;
  #reason: unknown;
  /** `passed`: the time ran out; `cut`: the body failed first. */
  #state: "running" | "passed" | "cut" = "running";

  constructor(timeoutMs: number) {
    this.#over = new Promise<never>((_, reject) => (this.#stop = reject));
    // Rejects for every exchange cut short, raced or not: nobody has to be listening.
    this.#over.catch(() => {});
    this.#endsAt = Date.now() + timeoutMs;
    this.#upstreamShareMs = Math.min(timeoutMs / 2, MAX_UPSTREAM_SHARE_MS);
    this.#timer = this.#startTimer(timeoutMs);
  }

  #startTimer(ms: number): ReturnType<typeof setTimeout> {
    return setTimeout(() => {
      this.#end("passed", new DOMException("The tunnel's deadline passed", "TimeoutError"));
    }, ms);
  }

  /**
   * The body has been handed to Sentry whole: from now on, Sentry has at least its share of the
   * time to answer, even if the client sent its last byte just before the deadline. So a timeout
   * after this is Sentry's own, and only then does it count against Sentry (breaker, spool); a
   * client that trickles its body can stretch its request by the share, no more.
   */
  giveUpstreamItsShare(): void {
    if (this.#state !== "running") return;
    const until = Date.now() + this.#upstreamShareMs;
    if (until <= this.#endsAt) return;
    clearTimeout(this.#timer);
    this.#endsAt = until;
    this.#timer = this.#startTimer(this.#upstreamShareMs);
  }

  /** Aborts when the time runs out or the exchange is {@link cut}: give it to the upstream fetch. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#state !== "running") this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** The body failed: end the exchange now, so the upstream request is aborted rather than completed. */
  cut(reason: unknown): void {
    this.#end("cut", reason);
  }

  /** How the exchange stands: running, or ended early by the time running out or by the body. */
  get state(): "running" | "passed" | "cut" {
    return this.#state;
  }

  #end(state: "passed" | "cut", reason: unknown): void {
    if (this.#state !== "running") return;
    this.#state = state;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.#stop(reason);
  }

  /** Settles as `work` does, or rejects as soon as the exchange ends first. */
  race<T>(work: Promise<T>): Promise<T> {
    return Promise.race([work, this.#over]);
  }

  /**
   * The bound on a binding's call on the request's path (the spool's queue, bucket and budgets):
   * the deadline while it runs. Once it has passed under Sentry (a timeout, which the spool is
   * for), the calls that store the envelope share one more span as long as Sentry's share, and no
   * more: the request is answered by then, stored or lost.
   */
  bound<T>(work: Promise<T>): Promise<T> {
    if (this.#state !== "passed") return this.race(work);
    if (!this.#afterward) {
      let stop!: (reason: unknown) => void;
      const over = new Promise<never>((_, reject) => (stop = reject));
      over.catch(() => {});
      const timer = setTimeout(() => stop(new DOMException("The spool's share of the deadline passed", "TimeoutError")), this.#upstreamShareMs);
      this.#afterward = { over, timer };
    }
    return Promise.race([work, this.#afterward.over]);
  }

  end(): void {
    clearTimeout(this.#timer);
    if (this.#afterward) clearTimeout(this.#afterward.timer);
  }
}

/** Half the deadline, and no more than this: Sentry answers an envelope in well under a second. */
const MAX_UPSTREAM_SHARE_MS = 10_000;

/** Where an exchange was when it ended early. */
export type Phase = "receiving" | "forwarding";

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
  const passed = deadline.state === "passed";
  switch (phase) {
    case "receiving":
      return passed ? "body_timeout" : "body_incomplete";
    case "forwarding":
      if (passed) return body.complete ? "upstream_timeout" : "body_timeout";
      if (deadline.state === "cut") return body.tooLarge ? "envelope_too_large" : "body_incomplete";
      return "upstream_unreachable";
  }
}
