import { LimitWindow } from "../shared/limit-window.ts";
import { clientKey } from "./client-key.ts";

/** Whether a client (by its `CF-Connecting-IP`) may send one more request now. */
export type ClientLimiter = (ip: string | null) => Promise<boolean>;

/**
 * The Workers rate limiter, asked about every request but one from a client it has just refused:
 * that client is refused here until the limiter's window ends, without asking again. Windows are
 * counted as Miniflare counts them, aligned to the period; a client still over its limit in the
 * next window is refused by the binding again. So nothing gets through that the binding would
 * refuse, and a flood from one client costs one call per window instead of one per request.
 *
 * A limiter that fails lets the request through: losing monitoring is worse than a missed limit.
 */
export function createClientLimiter(binding: Pick<RateLimit, "limit">, periodSeconds: number, now: () => number = Date.now): ClientLimiter {
  const window = new LimitWindow(periodSeconds * 1000, now);
  return async (ip) => {
    const key = clientKey(ip);
    if (window.isRefused(key)) return false;
    let success: boolean;
    try {
      ({ success } = await binding.limit({ key }));
    } catch {
      return true;
    }
    if (!success) window.refuse(key);
    return success;
  };
}
