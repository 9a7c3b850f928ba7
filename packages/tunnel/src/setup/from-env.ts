import type { TunnelOptions } from "./options.ts";
import { READ_FROM, type Limiter } from "../shared/checks.ts";
import { ConfigError, variableReader, type VariableValue } from "../shared/variables.ts";

/**
 * The Worker variables and bindings {@link optionsFromEnv} reads, each under the name the README's
 * `wrangler.toml` gives it.
 */
export interface TunnelEnv {
  SENTRY_DSN?: VariableValue;
  SENTRY_ENVIRONMENT?: VariableValue;
  TUNNEL_ALLOWED_DSNS?: VariableValue;
  TUNNEL_ALLOWED_ORIGINS?: VariableValue;
  TUNNEL_ROUTE?: VariableValue;
  TUNNEL_RETIRED_ROUTES?: VariableValue;
  TUNNEL_SENTRY_PATHS?: VariableValue;
  TUNNEL_MAX_ENVELOPE_BYTES?: VariableValue;
  TUNNEL_TIMEOUT_MS?: VariableValue;
  TUNNEL_RATE_LIMITING?: VariableValue;
  TUNNEL_LOG_FORWARDED?: VariableValue;
  TUNNEL_UPSTREAM_ORIGIN?: VariableValue;
  /** Workers Rate Limiting, keyed by the client's address: required unless `TUNNEL_RATE_LIMITING=off`. */
  TUNNEL_RATE_LIMITER?: Limiter;
  /** Workers Analytics Engine: one data point per request and per spool outcome. */
  TUNNEL_ANALYTICS?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
}

/** Each option read from a variable, by the variable's name. */
const VARIABLE_OF = {
  dsn: "SENTRY_DSN",
  environment: "SENTRY_ENVIRONMENT",
  allowedDsns: "TUNNEL_ALLOWED_DSNS",
  allowedOrigins: "TUNNEL_ALLOWED_ORIGINS",
  route: "TUNNEL_ROUTE",
  retiredRoutes: "TUNNEL_RETIRED_ROUTES",
  sentryPaths: "TUNNEL_SENTRY_PATHS",
  maxEnvelopeBytes: "TUNNEL_MAX_ENVELOPE_BYTES",
  timeoutMs: "TUNNEL_TIMEOUT_MS",
  logForwarded: "TUNNEL_LOG_FORWARDED",
  upstreamOrigin: "TUNNEL_UPSTREAM_ORIGIN",
  limiter: "TUNNEL_RATE_LIMITER",
  limiterOff: "TUNNEL_RATE_LIMITING",
  analytics: "TUNNEL_ANALYTICS",
} as const;

/**
 * The tunnel's options from a Worker's variables and its bindings of fixed names (`env`), for
 * settings kept in `wrangler.toml`, `.dev.vars` and `--var`. A value is text as those give it, or
 * an unquoted TOML number or `true`/`false`, read as its text. Refusals, here and in
 * `createTunnel`, name the variable or binding. Spread it to add or override options:
 * `createTunnel({ ...optionsFromEnv(env), spool: spool({ … }) })`.
 */
export function optionsFromEnv(env: TunnelEnv): TunnelOptions {
  // Renamed: it bounds the whole exchange, not only Sentry's part. A deploy still setting it would
  // otherwise run on the default without a word.
  if ("TUNNEL_UPSTREAM_TIMEOUT_MS" in env) {
    throw new ConfigError("TUNNEL_TIMEOUT_MS", "replaces TUNNEL_UPSTREAM_TIMEOUT_MS, which is still set: rename it");
  }
  // No longer read: it only restated the limiter's `period`. Left set, it would be ignored without a word.
  if ("TUNNEL_RATE_LIMIT_PERIOD_SECONDS" in env) {
    throw new ConfigError(
      "TUNNEL_RATE_LIMIT_PERIOD_SECONDS",
      "is no longer read: the limiter's period is taken to be 10 s, as the README's wrangler.toml sets it. Remove it; for a period of 60, give limiterPeriodSeconds: 60 in code",
    );
  }
  const read = variableReader<keyof TunnelEnv>(env);
  const options: TunnelOptions = {
    dsn: read.text("SENTRY_DSN"),
    environment: read.text("SENTRY_ENVIRONMENT"),
    allowedDsns: read.list("TUNNEL_ALLOWED_DSNS"),
    allowedOrigins: read.origins("TUNNEL_ALLOWED_ORIGINS"),
    route: read.text("TUNNEL_ROUTE") || undefined,
    retiredRoutes: read.list("TUNNEL_RETIRED_ROUTES"),
    sentryPaths: read.onOrOff("TUNNEL_SENTRY_PATHS", undefined),
    maxEnvelopeBytes: read.positiveInteger("TUNNEL_MAX_ENVELOPE_BYTES", undefined),
    timeoutMs: read.positiveInteger("TUNNEL_TIMEOUT_MS", undefined),
    logForwarded: read.onOrOff("TUNNEL_LOG_FORWARDED", undefined),
    upstreamOrigin: read.optionalOrigin("TUNNEL_UPSTREAM_ORIGIN"),
    limiter: limiterOf(env, read.onOrOff("TUNNEL_RATE_LIMITING", true)),
    analytics: env.TUNNEL_ANALYTICS,
  };
  return Object.assign(options, { [READ_FROM]: VARIABLE_OF });
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
