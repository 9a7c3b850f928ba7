import { clientKey } from "../request/client-key.ts";
import { LimitWindow } from "../shared/limit-window.ts";
import { callBinding, type Within } from "./binding-call.ts";

/** What one call of a budget's rate limiter stands for: a 20 MiB envelope is 80 calls. */
export const SPOOL_BUDGET_UNIT_BYTES = 256 * 1024;
/** The budget bindings' period in `wrangler.toml`: the carried bytes start again with each window. */
export const SPOOL_BUDGET_PERIOD_SECONDS = 60;

/** The total budget's key; a client's key is its address, which never reads so. */
const TOTAL_KEY = "all";

/**
 * Whether a client may store `bytes` more in the spool now, each binding's call `within` the
 * request's bound; rejects with a `BindingFailed` naming a binding that failed or did not answer.
 */
export type SpoolBudget = (clientIp: string | null, bytes: number, within: Within) => Promise<boolean>;

/** A budget's binding, and what the operator calls it. */
export interface NamedLimiter {
  limiter: Pick<RateLimit, "limit">;
  name: string;
}

/**
 * The spool's byte budgets, kept by Workers Rate Limiting bindings that count units of
 * {@link SPOOL_BUDGET_UNIT_BYTES}: one per client (its address, an IPv6 client's /64), and one for
 * everything this location stores. Asked only while Sentry is failing, never for a live forward.
 *
 * The bytes short of a whole unit are carried in the isolate until they make one, so that a small
 * envelope usually costs no call at all and a large one a call per unit. The client's budget is
 * asked first, so that a client over its own spends nothing of the total. A budget whose binding
 * fails or does not answer stores nothing (the envelope is lost, and said so), as the request
 * limiter refuses a request then; one not bound (the limiter `"off"`) never says no.
 */
export function createSpoolBudget(perClient: NamedLimiter | undefined, total: NamedLimiter | undefined, now: () => number = Date.now): SpoolBudget {
  const window = new LimitWindow(SPOOL_BUDGET_PERIOD_SECONDS * 1000, now);
  const spend = async (budget: NamedLimiter | undefined, key: string, bytes: number, within: Within): Promise<boolean> => {
    if (!budget) return true;
    if (window.isRefused(key)) return false;
    const units = window.unitsFor(key, bytes, SPOOL_BUDGET_UNIT_BYTES);
    for (let unit = 0; unit < units; unit += 1) {
      const { success } = await callBinding(budget.name, () => budget.limiter.limit({ key }), within);
      if (!success) {
        window.refuse(key);
        return false;
      }
    }
    return true;
  };

  return async (clientIp, bytes, within) => (await spend(perClient, clientKey(clientIp), bytes, within)) && (await spend(total, TOTAL_KEY, bytes, within));
}
