import { clientKey } from "./client-key.ts";

/** Client and kind pairs remembered; past this, new clients share one count per kind. */
const MAX_REMEMBERED = 10_000;
/** The key every client past {@link MAX_REMEMBERED} shares; no address reads so. */
const OTHERS = "others";

interface Held<Line> {
  /** The window its last line was written in. */
  window: number;
  /** Lines held back since then, and the last of them. */
  count: number;
  line: Line;
}

/**
 * One log line per client, kind of line and window of the limiter's period, however often a client
 * repeats what makes it: a flood costs a bounded number of billed log events, and the lines that
 * need a look are not buried. Each line written carries `repeats`, the identical lines of that
 * client held back before it, so that a line stands for `1 + repeats` of them; every request still
 * has its data point. What a window held is carried by the client's next line in the window after,
 * or else written on its own once a later window has begun, at the next {@link say} or
 * {@link flush} (the tunnel flushes with every request it records): the count of an isolate's last
 * window waits for its next request, or is only in the data points if none comes.
 */
export class RepeatedLines<Line extends object> {
  readonly #periodMs: number;
  readonly #now: () => number;
  readonly #write: (line: Line & { repeats: number }) => void;
  readonly #held = new Map<string, Held<Line>>();
  #window = Number.NEGATIVE_INFINITY;

  constructor(periodSeconds: number, write: (line: Line & { repeats: number }) => void, now: () => number = Date.now) {
    this.#periodMs = periodSeconds * 1000;
    this.#write = write;
    this.#now = now;
  }

  /** `line`, said on behalf of the client at `ip` (its `CF-Connecting-IP`); `kind` tells lines apart that differ in more than their figures. */
  say(ip: string | null, kind: string, line: Line): void {
    const window = this.flush();
    let key = `${clientKey(ip)}\n${kind}`;
    if (!this.#held.has(key) && this.#held.size >= MAX_REMEMBERED) key = `${OTHERS}\n${kind}`;
    const held = this.#held.get(key);
    if (held?.window === window) {
      held.count += 1;
      held.line = line;
      return;
    }
    this.#write({ ...line, repeats: held?.count ?? 0 });
    this.#held.set(key, { window, count: 0, line });
  }

  /**
   * Once a new window has begun: what a client held two windows ago and did not carry on its own
   * line since is written now, the last line held standing for the rest; clients with nothing held
   * are forgotten. Returns the current window.
   */
  flush(): number {
    const window = Math.floor(this.#now() / this.#periodMs);
    if (window === this.#window) return window;
    this.#window = window;
    for (const [key, held] of this.#held) {
      if (held.window >= window - 1) continue;
      if (held.count === 0) {
        this.#held.delete(key);
        continue;
      }
      this.#write({ ...held.line, repeats: held.count - 1 });
      this.#held.set(key, { window, count: 0, line: held.line });
    }
    return window;
  }
}
