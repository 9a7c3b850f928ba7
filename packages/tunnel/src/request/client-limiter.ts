import { LimitWindow } from "../shared/limit-window.ts";
import { clientKey } from "./client-key.ts";

/**
 * The limiter binding's `period` in `wrangler.toml`, which the tunnel takes it to be: a limited
 * client's `Retry-After`, and the window its repeated refusals share one log line in.
 */
export const LIMITER_PERIOD_SECONDS = 10;

/** Whether a client (by its `CF-Connecting-IP`) may send one more request now. */
export type ClientLimiter = (ip: string | null) => Promise<boolean>;

/** Said when the limiter's binding fails: at most one line per period, counting the calls that failed. */
export interface LimiterLine {
  event: "tunnel_limiter";
  status: "failed";
  /** The binding's own words for its last failure, cut short. */
  error: string;
  /** Calls that failed since the last such line, this one among them; each request was refused. */
  failures: number;
}

/**
 * A limiter call unanswered after this has failed: Workers Rate Limiting answers within a
 * millisecond, and Miniflare's simulation of it on a busy machine within a second or so.
 */
const LIMIT_CALL_TIMEOUT_MS = 3_000;

/**
 * The Workers rate limiter, asked about every request but one from a client it has just refused:
 * that client is refused here until the limiter's window ends, without asking again. Windows are
 * counted as Miniflare counts them, aligned to the period; a client still over its limit in the
 * next window is refused by the binding again. So nothing gets through that the binding would
 * refuse, and a flood from one client costs one call per window instead of one per request.
 *
 * A limiter that fails (throws, or does not answer within 3 s) refuses the request, as a
 * limiter that says no would: a binding that fails every call must not lift every limit, nor hold
 * every request. `failed` is told of it, at most once a period, with the count of calls that
 * failed meanwhile.
 */
export function createClientLimiter(
  binding: Pick<RateLimit, "limit">,
  periodSeconds: number,
  now: () => number = Date.now,
  failed: (line: LimiterLine) => void = () => {},
): ClientLimiter {
  const window = new LimitWindow(periodSeconds * 1000, now);
  let failures = 0;
  let saidAt = -Infinity;
  return async (ip) => {
    const key = clientKey(ip);
    if (window.isRefused(key)) return false;
    let success: boolean;
    try {
      ({ success } = await answerWithin(binding.limit({ key }), LIMIT_CALL_TIMEOUT_MS));
    } catch (error) {
      failures += 1;
      if (now() - saidAt >= periodSeconds * 1000) {
        failed({ event: "tunnel_limiter", status: "failed", error: (error instanceof Error ? error.message : String(error)).slice(0, 300), failures });
        failures = 0;
        saidAt = now();
      }
      return false;
    }
    if (!success) window.refuse(key);
    return success;
  };
}

/** `answer`, or a rejection once `ms` have passed without it. */
async function answerWithin<T>(answer: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}
