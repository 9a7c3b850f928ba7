import { clientKey } from "./client-key.server";

/** Clients refused in one window that an isolate remembers; past this, the rest are asked about as before. */
const MAX_REMEMBERED_CLIENTS = 10_000;

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
  const periodMs = periodSeconds * 1000;
  const refused = new Set<string>();
  let windowEnd = 0;
  return async (ip) => {
    const key = clientKey(ip);
    const end = (Math.floor(now() / periodMs) + 1) * periodMs;
    if (end !== windowEnd) {
      refused.clear();
      windowEnd = end;
    }
    if (refused.has(key)) return false;
    let success: boolean;
    try {
      ({ success } = await binding.limit({ key }));
    } catch {
      return true;
    }
    if (!success && refused.size < MAX_REMEMBERED_CLIENTS) refused.add(key);
    return success;
  };
}
