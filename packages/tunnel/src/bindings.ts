import type { LogLine } from "./log-line.ts";
import type { ClientLimiter } from "./request/client-limiter.ts";
import type { TunnelSettings } from "./settings.ts";
import { ConfigError } from "./shared/variables.ts";
import type { SpoolQueue } from "./spool/store.ts";

/**
 * The bindings the tunnel uses, as `wrangler.toml` declares them. The limits are required unless
 * `TUNNEL_RATE_LIMITING=off`: the request limiter always, without which any client could spend
 * the project's quota, and the spool's byte budgets once the spool is bound. Without the others
 * the tunnel works: no data points, and nothing stored when Sentry cannot take it.
 */
export interface TunnelBindings {
  /** Workers Rate Limiting, keyed by the client's address: its share of the tunnel and of what the Worker reports. */
  TUNNEL_RATE_LIMITER?: Pick<RateLimit, "limit">;
  /** Workers Analytics Engine: one data point per request and per spool outcome. */
  TUNNEL_ANALYTICS?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  /** Where envelopes Sentry cannot take now are stored, and consumed from by this Worker. */
  TUNNEL_SPOOL?: SpoolQueue;
  /** Bodies too large for a queue message. */
  TUNNEL_SPOOL_BUCKET?: R2Bucket;
  /** Byte budgets of what one client, and everyone, may store. */
  TUNNEL_SPOOL_CLIENT_BUDGET?: Pick<RateLimit, "limit">;
  TUNNEL_SPOOL_TOTAL_BUDGET?: Pick<RateLimit, "limit">;
}

/** What the tunnel takes from the runtime besides its bindings; each has the runtime's own as default. */
export interface TunnelRuntime {
  /** Keeps the isolate alive for work after the answer (`waitUntil` from `cloudflare:workers`): client reports. */
  background?: ((work: Promise<unknown>) => void) | undefined;
  /** A bug in the tunnel itself; the client gets a 500 either way. */
  reportError?: (error: unknown, request: Request) => void;
  /** The tunnel's and the spool's log lines; one JSON line each on the console by default. */
  log?: (line: LogLine) => void;
  /** The clock: Sentry's limits, the breakers, the limiters' windows, the spool's ages and client reports. */
  now?: () => number;
  /** The spool's retry jitter. */
  random?: () => number;
  /** Every request towards Sentry: tests and simulations answer as Sentry would, without a socket. */
  fetch?: typeof fetch | undefined;
}

/** With `TUNNEL_RATE_LIMITING=off`, said on purpose: every client through, nothing asked. */
export const EVERY_CLIENT: ClientLimiter = async () => true;

/** Said of a limit's binding that is missing while limits are on. */
const unbound = (name: string, what: string) =>
  new ConfigError(
    name,
    `is not bound, so ${what} would have no limit: declare it in wrangler.toml (each [env.*] section needs its own [[ratelimits]]), ` +
      "or set TUNNEL_RATE_LIMITING=off to run without limits on purpose",
  );

/** The request limiter and the spool's two byte budgets, each `undefined` when not to be asked. */
interface LimitBindings {
  limiter: Pick<RateLimit, "limit"> | undefined;
  clientBudget: Pick<RateLimit, "limit"> | undefined;
  totalBudget: Pick<RateLimit, "limit"> | undefined;
}

/**
 * The limits' bindings as the settings require them: all of them while limits are on, the spool's
 * byte budgets once a spool is bound, and none at all when the operator turned limits off. A
 * missing one stops the Worker when it starts, with its name: left out of an `[env.*]` section,
 * it would otherwise lift every limit without a word.
 */
export function limitBindings(settings: TunnelSettings, bindings: TunnelBindings): LimitBindings {
  const { TUNNEL_RATE_LIMITER: limiter, TUNNEL_SPOOL_CLIENT_BUDGET, TUNNEL_SPOOL_TOTAL_BUDGET } = bindings;
  if (!settings.rateLimiting) {
    const bound = [limiter && "TUNNEL_RATE_LIMITER", TUNNEL_SPOOL_CLIENT_BUDGET && "TUNNEL_SPOOL_CLIENT_BUDGET", TUNNEL_SPOOL_TOTAL_BUDGET && "TUNNEL_SPOOL_TOTAL_BUDGET"].filter(Boolean);
    if (bound.length > 0) throw new ConfigError("TUNNEL_RATE_LIMITING", `is off, but ${bound.join(" and ")} ${bound.length > 1 ? "are" : "is"} bound: remove the setting or the binding`);
    return { limiter: undefined, clientBudget: undefined, totalBudget: undefined };
  }
  if (!limiter) throw unbound("TUNNEL_RATE_LIMITER", "the requests one client sends to Sentry");
  requireLimiter("TUNNEL_RATE_LIMITER", limiter);
  if (bindings.TUNNEL_SPOOL) {
    if (!TUNNEL_SPOOL_CLIENT_BUDGET) throw unbound("TUNNEL_SPOOL_CLIENT_BUDGET", "the bytes one client stores in the spool");
    if (!TUNNEL_SPOOL_TOTAL_BUDGET) throw unbound("TUNNEL_SPOOL_TOTAL_BUDGET", "the bytes every client stores in the spool");
    requireLimiter("TUNNEL_SPOOL_CLIENT_BUDGET", TUNNEL_SPOOL_CLIENT_BUDGET);
    requireLimiter("TUNNEL_SPOOL_TOTAL_BUDGET", TUNNEL_SPOOL_TOTAL_BUDGET);
  }
  return { limiter, clientBudget: TUNNEL_SPOOL_CLIENT_BUDGET, totalBudget: TUNNEL_SPOOL_TOTAL_BUDGET };
}

/**
 * Throws unless `binding` answers `limit()`: given the wrong object (the whole `env`, another
 * binding), the tunnel would otherwise fail on every call, which refuses every request.
 */
function requireLimiter(name: string, binding: unknown): void {
  const limit: unknown = typeof binding === "object" && binding !== null ? Reflect.get(binding, "limit") : undefined;
  if (typeof limit !== "function") {
    throw new ConfigError(name, "is not a Workers Rate Limiting binding (it has no limit() method): bind a [[ratelimits]] entry under this name, or pass that binding");
  }
}
