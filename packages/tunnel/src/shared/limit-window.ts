/** Keys remembered per window; past this, the rest are asked about, or charged, as if unknown. */
const MAX_REMEMBERED_KEYS = 10_000;

/**
 * What one isolate remembers of a Workers Rate Limiting binding's current window, so as to ask it
 * less: the keys it refused (refused here too until the window ends, without asking again) and the
 * bytes short of a whole unit carried per key. Windows are aligned to the period, as Miniflare
 * counts them; everything is forgotten when one ends, and at most 10,000 keys are held.
 */
export class LimitWindow {
  #end = 0;
  readonly #refused = new Set<string>();
  readonly #carried = new Map<string, number>();
  readonly #periodMs: number;
  readonly #now: () => number;

  constructor(periodMs: number, now: () => number = Date.now) {
    this.#periodMs = periodMs;
    this.#now = now;
  }

  /** The binding refused `key` in this window. */
  isRefused(key: string): boolean {
    this.#turn();
    return this.#refused.has(key);
  }

  refuse(key: string): void {
    this.#turn();
    if (this.#refused.size < MAX_REMEMBERED_KEYS) this.#refused.add(key);
  }

  /** The whole units `bytes` completes for `key`, what is left carried to its next call. */
  unitsFor(key: string, bytes: number, unitBytes: number): number {
    this.#turn();
    const known = this.#carried.get(key);
    if (known === undefined && this.#carried.size >= MAX_REMEMBERED_KEYS) return Math.max(1, Math.ceil(bytes / unitBytes));
    const sum = (known ?? 0) + bytes;
    this.#carried.set(key, sum % unitBytes);
    return Math.floor(sum / unitBytes);
  }

  #turn(): void {
    const end = (Math.floor(this.#now() / this.#periodMs) + 1) * this.#periodMs;
    if (end === this.#end) return;
    this.#refused.clear();
    this.#carried.clear();
    this.#end = end;
  }
}
