import { clientKey } from "../request/client-key.ts";
import { LimitWindow } from "../shared/limit-window.ts";

/** What one call of a budget's rate limiter stands for: a 20 MiB envelope is 80 calls. */
export const SPOOL_BUDGET_UNIT_BYTES = 256 * 1024;
/** The budget bindings' period in `wrangler.toml`: the carried bytes start again with each window. */
export const SPOOL_BUDGET_PERIOD_SECONDS = 60;

/** The total budget's key; a client's key is its address, which never reads so. */
const TOTAL_KEY = "all";

/** Whether a client may store `bytes` more in the spool now. */
export type SpoolBudget = (clientIp: string | null, bytes: number) => Promise<boolean>;

/**
 * The spool's byte budgets, kept by Workers Rate Limiting bindings that count units of
 * {@link SPOOL_BUDGET_UNIT_BYTES}: one per client (its address, an IPv6 client's /64), and one for
 * everything this location stores. Asked only while Sentry is failing, never for a live forward.
 *
 * The bytes short of a whole unit are carried in the isolate until they make one, so that a small
 * envelope usually costs no call at all and a large one a call per unit. The client's budget is
 * asked first, so that a client over its own spends nothing of the total. Like the request limiter,
 * a budget whose binding fails lets the envelope be stored, and one not bound never says no: only
 * the request limit then bounds what a client stores.
 */
export function createSpoolBudget(
  perClient: Pick<RateLimit, "limit"> | undefined,
  total: Pick<RateLimit, "limit"> | undefined,
  now: () => number = Date.now,
): SpoolBudget {
  const window = new LimitWindow(SPOOL_BUDGET_PERIOD_SECONDS * 1000, now);
  const spend = async (limiter: Pick<RateLimit, "limit"> | undefined, key: string, bytes: number): Promise<boolean> => {
    if (!limiter) return true;
    if (window.isRefused(key)) return false;
    const units = window.unitsFor(key, bytes, SPOOL_BUDGET_UNIT_BYTES);
    for (let unit = 0; unit < units; unit += 1) {
      let success: boolean;
      try {
        ({ success } = await limiter.limit({ key }));
      } catch {
        return true;
      }
      if (!success) {
        window.refuse(key);
        return false;
      }
    }
    return true;
  };

  return async (clientIp, bytes) => {
    return (await spend(perClient, clientKey(clientIp), bytes)) && (await spend(total, TOTAL_KEY, bytes));
  };
}
