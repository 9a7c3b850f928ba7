import type { TunnelOptions } from "./options.ts";
import { optionsFromTable, type Limiter } from "../shared/checks.ts";
import { ConfigError, variableReader, type VariableRead, type VariablesOf, type VariableValue } from "../shared/variables.ts";

/** Each option a Worker variable gives, by the name the README's `wrangler.toml` gives it, and how its text reads. */
const VARIABLES = {
  dsn: ["SENTRY_DSN", "text"],
  environment: ["SENTRY_ENVIRONMENT", "text"],
  allowedDsns: ["TUNNEL_ALLOWED_DSNS", "list"],
  allowedOrigins: ["TUNNEL_ALLOWED_ORIGINS", "list"],
  route: ["TUNNEL_ROUTE", "text"],
  retiredRoutes: ["TUNNEL_RETIRED_ROUTES", "list"],
  sentryPaths: ["TUNNEL_SENTRY_PATHS", "onOrOff"],
  maxEnvelopeBytes: ["TUNNEL_MAX_ENVELOPE_BYTES", "number"],
  timeoutMs: ["TUNNEL_TIMEOUT_MS", "number"],
  logForwarded: ["TUNNEL_LOG_FORWARDED", "onOrOff"],
  upstreamOrigin: ["TUNNEL_UPSTREAM_ORIGIN", "text"],
} as const satisfies Partial<Record<keyof TunnelOptions, readonly [string, VariableRead]>>;

/** The bindings, and the variable that turns the limits off, by their names. */
const BINDINGS = { limiter: "TUNNEL_RATE_LIMITER", limiterOff: "TUNNEL_RATE_LIMITING", analytics: "TUNNEL_ANALYTICS" } as const;

/**
 * The Worker variables and bindings {@link optionsFromEnv} reads, each under the name the README's
 * `wrangler.toml` gives it: `TUNNEL_RATE_LIMITER` (Workers Rate Limiting, keyed by the client's
 * address) is required unless `TUNNEL_RATE_LIMITING=off`; `TUNNEL_ANALYTICS` (Workers Analytics
 * Engine) writes one data point per request and per spool outcome.
 */
export type TunnelEnv = VariablesOf<typeof VARIABLES> & {
  TUNNEL_RATE_LIMITING?: VariableValue;
  TUNNEL_RATE_LIMITER?: Limiter;
  TUNNEL_ANALYTICS?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
};

/**
 * The tunnel's options from a Worker's variables and its bindings of fixed names (`env`), for
 * settings kept in `wrangler.toml`, `.dev.vars` and `--var`. A value is text as those give it, or
 * an unquoted TOML number or `true`/`false`, read as its text. Refusals, here and in
 * `createTunnel`, name the variable or binding. Spread it to add or override options:
 * `createTunnel({ ...optionsFromEnv(env), spool: spool({ … }) })`.
 */
export function optionsFromEnv(env: TunnelEnv): TunnelOptions {
  const options = optionsFromTable(env, VARIABLES, BINDINGS) as Partial<TunnelOptions>;
  return Object.assign(options, { limiter: limiterOf(env, variableReader(env).onOrOff(BINDINGS.limiterOff, true)), analytics: env.TUNNEL_ANALYTICS });
}

/**
 * The limiter as the variables ask: the binding, or `"off"` when `TUNNEL_RATE_LIMITING=off` says
 * so. A binding left out of an `[env.*]` section stops the Worker with its name rather than
 * lifting every limit without a word.
 */
function limiterOf(env: TunnelEnv, on: boolean): Limiter | "off" {
  if (!on) {
    if (env.TUNNEL_RATE_LIMITER) throw new ConfigError("TUNNEL_RATE_LIMITING", "is off, but TUNNEL_RATE_LIMITER is bound: remove the setting or the binding");
    return "off";
  }
  if (!env.TUNNEL_RATE_LIMITER) throw new ConfigError("TUNNEL_RATE_LIMITER", unboundLimit("the requests one client sends to Sentry"));
  return env.TUNNEL_RATE_LIMITER;
}

/** Said of a limit's binding left out while limits are on, as `wrangler.toml` would fix it. */
export function unboundLimit(what: string): string {
  return (
    `is not bound, so ${what} would have no limit: declare it in wrangler.toml (each [env.*] section needs its own [[ratelimits]]), ` +
    "or set TUNNEL_RATE_LIMITING=off to run without limits on purpose"
  );
}
