import { RELEASE } from "./release.generated";
import { derivedRoute, parseDsn, projectOf, routeProblem, TUNNEL_PATH, upstreamUrlFor, type Dsn, type TunnelSettings, type ProjectIdentity } from "./tunnel";

/** The Worker's settings, read from `env` once and checked, so that a request never meets a bad one. */
export interface AppConfig {
  sentry: SentryConfig;
  tunnel: TunnelSettings;
  /**
   * Whether `/sentry-example-page` and its loader page exist. They make the Worker report to Sentry
   * on request, so in production they are off unless the operator turns them on.
   */
  selfTest: boolean;
  /** Origins besides the app's own that pages may fetch from: the CSP's `connect-src`. */
  connectOrigins: readonly string[];
}

export interface SentryConfig {
  /** The app's own public DSN, as the SDKs are given it; `undefined` when monitoring is not configured. */
  dsn: string | undefined;
  /** Which project that DSN reports to: the browser's tunnel path names it. */
  project: ProjectIdentity | undefined;
  /** That DSN's public key, which the Worker's trace headers name. */
  publicKey: string | undefined;
  environment: string;
  tracesSampleRate: number;
  /** Origins beyond the app's own that receive `sentry-trace` and `baggage`. */
  tracePropagationTargets: readonly string[];
  /** Development and tests: where the Worker's own SDK sends, instead of Sentry (`TUNNEL_UPSTREAM_ORIGIN`). */
  workerEnvelopeUrl: string | undefined;
}

/** The variables this module reads; the rest of `env` (bindings) is not its concern. */
export type ConfigEnv = Pick<
  Env,
  | "SENTRY_DSN"
  | "SENTRY_ENVIRONMENT"
  | "SENTRY_TRACES_SAMPLE_RATE"
  | "SENTRY_TRACE_PROPAGATION_TARGETS"
  | "SENTRY_SELF_TEST"
  | "CSP_CONNECT_ORIGINS"
  | "TUNNEL_ALLOWED_DSNS"
  | "TUNNEL_ALLOWED_ORIGINS"
  | "TUNNEL_MAX_ENVELOPE_BYTES"
  | "TUNNEL_UPSTREAM_ORIGIN"
  | "TUNNEL_TIMEOUT_MS"
  | "TUNNEL_RATE_LIMIT_PERIOD_SECONDS"
  | "TUNNEL_SPOOL_RETRY_SECONDS"
  | "TUNNEL_ROUTE"
  | "TUNNEL_RETIRED_ROUTES"
>;

export class ConfigError extends Error {
  constructor(
    readonly variable: keyof ConfigEnv,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
    this.name = "ConfigError";
  }
}

const DEFAULT_MAX_ENVELOPE_BYTES = 20 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RATE_LIMIT_PERIOD_SECONDS = 10;
const DEFAULT_SPOOL_RETRY_SECONDS = 10;

/**
 * Throws a {@link ConfigError} naming the first variable that is wrong. `pages` are the app's page
 * paths as its router declares them, which no tunnel route may shadow.
 */
export function readConfig(env: Partial<ConfigEnv>, pages: readonly string[] = []): AppConfig {
  // Renamed: it bounds the whole exchange, not only Sentry's part. A deploy still setting it would
  // otherwise run on the default without a word.
  if ("TUNNEL_UPSTREAM_TIMEOUT_MS" in env) {
    throw new ConfigError("TUNNEL_TIMEOUT_MS", "replaces TUNNEL_UPSTREAM_TIMEOUT_MS, which is still set: rename it");
  }
  const ownDsn = optionalDsn(env, "SENTRY_DSN");
  const upstreamOrigin = optionalOrigin(env, "TUNNEL_UPSTREAM_ORIGIN");
  const extraDsns = list(env.TUNNEL_ALLOWED_DSNS).map((value) => dsn("TUNNEL_ALLOWED_DSNS", value));
  const environment = text(env.SENTRY_ENVIRONMENT) || "production";
  const tracePropagationTargets = list(env.SENTRY_TRACE_PROPAGATION_TARGETS).map((value) => origin("SENTRY_TRACE_PROPAGATION_TARGETS", value));

  return {
    selfTest: onOrOff(env, "SENTRY_SELF_TEST", environment !== "production"),
    // The APIs the page traces are APIs it calls.
    connectOrigins: [...new Set([...tracePropagationTargets, ...list(env.CSP_CONNECT_ORIGINS).map((value) => origin("CSP_CONNECT_ORIGINS", value))])],
    sentry: {
      dsn: ownDsn?.text,
      project: ownDsn && projectOf(ownDsn),
      publicKey: ownDsn?.publicKey,
      environment,
      tracesSampleRate: sampleRate(env, "SENTRY_TRACES_SAMPLE_RATE", 1),
      tracePropagationTargets,
      workerEnvelopeUrl: ownDsn && upstreamOrigin ? upstreamUrlFor(ownDsn, upstreamOrigin) : undefined,
    },
    tunnel: {
      allowedDsns: ownDsn ? [ownDsn, ...extraDsns] : extraDsns,
      maxEnvelopeBytes: positiveInteger(env, "TUNNEL_MAX_ENVELOPE_BYTES", DEFAULT_MAX_ENVELOPE_BYTES),
      allowedOrigins: [...new Set(list(env.TUNNEL_ALLOWED_ORIGINS).map((value) => origin("TUNNEL_ALLOWED_ORIGINS", value)))],
      timeoutMs: positiveInteger(env, "TUNNEL_TIMEOUT_MS", DEFAULT_TIMEOUT_MS),
      upstreamOrigin,
      rateLimitPeriodSeconds: positiveInteger(env, "TUNNEL_RATE_LIMIT_PERIOD_SECONDS", DEFAULT_RATE_LIMIT_PERIOD_SECONDS),
      spoolRetrySeconds: positiveInteger(env, "TUNNEL_SPOOL_RETRY_SECONDS", DEFAULT_SPOOL_RETRY_SECONDS),
      ownProject: ownDsn && { dsn: ownDsn, environment, release: RELEASE },
      ...tunnelRoutes(env, ownDsn, pages),
    },
  };
}

/**
 * The route the pages post to, and every route served (decision 016). By default a path derived
 * from the DSN; `TUNNEL_ROUTE` replaces it (`/monitoring`: the original URL, with its query). The
 * default stays served when replaced, and so do `TUNNEL_RETIRED_ROUTES`, so that pages loaded
 * before a change keep delivering; `/monitoring` is always served.
 */
function tunnelRoutes(env: Partial<ConfigEnv>, ownDsn: Dsn | undefined, pages: readonly string[]): Pick<TunnelSettings, "route" | "routes"> {
  const checked = (variable: keyof ConfigEnv, value: string) => {
    const problem = value === TUNNEL_PATH ? undefined : routeProblem(value, pages);
    if (problem) throw new ConfigError(variable, problem);
    return value;
  };
  const derived = ownDsn && derivedRoute(ownDsn.text, pages);
  const chosen = text(env.TUNNEL_ROUTE);
  if (chosen === "" && ownDsn && !derived) {
    throw new ConfigError("TUNNEL_ROUTE", "must be set: the app's pages claim every path it could be given by default");
  }
  const route = chosen === "" ? (derived ?? TUNNEL_PATH) : checked("TUNNEL_ROUTE", chosen);
  const retired = list(env.TUNNEL_RETIRED_ROUTES).map((value) => checked("TUNNEL_RETIRED_ROUTES", value));
  return { route, routes: [...new Set([route, ...(derived ? [derived] : []), ...retired, TUNNEL_PATH])] };
}

function text(value: string | undefined): string {
  return (value ?? "").trim();
}

function list(value: string | undefined): string[] {
  return text(value)
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

function optionalDsn(env: Partial<ConfigEnv>, variable: keyof ConfigEnv): Dsn | undefined {
  const value = text(env[variable]);
  return value === "" ? undefined : dsn(variable, value);
}

function dsn(variable: keyof ConfigEnv, value: string): Dsn {
  const parsed = parseDsn(value);
  if (!parsed) throw new ConfigError(variable, `is not a valid Sentry DSN (https://<key>@<host>/<project id>): "${value}"`);
  return parsed;
}

function optionalOrigin(env: Partial<ConfigEnv>, variable: keyof ConfigEnv): string | undefined {
  const value = text(env[variable]);
  return value === "" ? undefined : origin(variable, value);
}

/** An `http(s)://host[:port]` origin with nothing after it; a path would be silently dropped otherwise. */
function origin(variable: keyof ConfigEnv, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(variable, `must be a list of origins such as https://example.com, got "${value}"`);
  }
  const bare = url.origin;
  if (!/^https?:$/.test(url.protocol) || value.replace(/\/$/, "") !== bare) {
    throw new ConfigError(variable, `must be a list of origins such as https://example.com, got "${value}"`);
  }
  return bare;
}

function positiveInteger(env: Partial<ConfigEnv>, variable: keyof ConfigEnv, fallback: number): number {
  const value = text(env[variable]);
  if (value === "") return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new ConfigError(variable, `must be a whole number above 0, got "${value}"`);
  }
  return Number(value);
}

function onOrOff(env: Partial<ConfigEnv>, variable: keyof ConfigEnv, fallback: boolean): boolean {
  const value = text(env[variable]).toLowerCase();
  if (value === "") return fallback;
  if (value === "on" || value === "off") return value === "on";
  throw new ConfigError(variable, `must be on or off (or empty for the default), got "${value}"`);
}

function sampleRate(env: Partial<ConfigEnv>, variable: keyof ConfigEnv, fallback: number): number {
  const value = text(env[variable]);
  if (value === "") return fallback;
  const rate = Number(value);
  if (!/^\d*\.?\d+$/.test(value) || rate > 1) {
    throw new ConfigError(variable, `must be a number from 0 to 1, got "${value}"`);
  }
  return rate;
}
