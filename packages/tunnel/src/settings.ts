import type { LogLine } from "./log-line.ts";
import { TUNNEL_PATH } from "./request/path.ts";
import { hostPathProblem, derivedRoute, routeCollision, routeProblem, sentryTunnelPath, type ServedRoute } from "./request/route.ts";
import { ConfigError, variableReader } from "./shared/variables.ts";
import type { SpoolQueue } from "./spool/store.ts";
import { parseDsn, type Dsn } from "./upstream/dsn.ts";
import { projectOf, type OwnProject } from "./upstream/ingest.ts";

/** The tunnel's settings, as {@link readTunnelSettings} reads them from the Worker's variables. */
export interface TunnelSettings {
  /** DSNs whose envelopes are forwarded, each to its own ingest. */
  allowedDsns: readonly Dsn[];
  /** Partner origins allowed besides the request's own; they also get CORS. */
  allowedOrigins: readonly string[];
  maxEnvelopeBytes: number;
  /** From a request's arrival to the tunnel's answer, whatever the request or Sentry does. */
  timeoutMs: number;
  /** Development and tests only: replaces scheme, host and port of every upstream URL. */
  upstreamOrigin: string | undefined;
  /**
   * Where the app's pages post envelopes: a path with no query, or `TUNNEL_PATH`, the original
   * `/monitoring?o=&p=[&r=]`. Its CSP reports go to `reportPathOf(route)`.
   */
  route: string;
  /** Every route served, {@link route} and `TUNNEL_PATH` among them: each is the same tunnel. */
  routes: readonly string[];
  /**
   * The paths Sentry's own browser SDK (11.12 and later) posts to with `tunnel: true`, one per
   * allowed DSN, also served (envelopes only, no query, no report path); none when
   * `TUNNEL_SENTRY_PATHS=off`.
   */
  sentryPaths: readonly string[];
  /** The rate limiter's period: how long a limited client is told to wait. */
  rateLimitPeriodSeconds: number;
  /** The spool's first retry delay; each further attempt waits twice as long, up to an hour. */
  spoolRetrySeconds: number;
  /**
   * Whether an envelope Sentry took (2xx) and a partner's preflight get a log line too. Off by
   * default: each would be a second Workers Logs event per envelope, priced above the request
   * itself, and its data point already counts it (`docs/operating.md`, "What the record costs").
   * Every refusal, failure and spool decision has its line either way.
   */
  logForwarded: boolean;
  /**
   * The app's own project: a route's CSP report path sends CSP reports there (without it, those
   * paths are not served), and the spool counts there what it drops of DSNs no longer allowed.
   */
  ownProject: OwnProject | undefined;
}

/** The Worker variables the tunnel reads; `wrangler.toml` and the README describe each. */
export type TunnelVariables = Partial<
  Record<
    | "SENTRY_DSN"
    | "SENTRY_ENVIRONMENT"
    | "TUNNEL_ALLOWED_DSNS"
    | "TUNNEL_ALLOWED_ORIGINS"
    | "TUNNEL_MAX_ENVELOPE_BYTES"
    | "TUNNEL_UPSTREAM_ORIGIN"
    | "TUNNEL_TIMEOUT_MS"
    | "TUNNEL_RATE_LIMIT_PERIOD_SECONDS"
    | "TUNNEL_SPOOL_RETRY_SECONDS"
    | "TUNNEL_ROUTE"
    | "TUNNEL_RETIRED_ROUTES"
    | "TUNNEL_SENTRY_PATHS"
    | "TUNNEL_LOG_FORWARDED",
    string
  >
>;

type TunnelVariable = keyof TunnelVariables;

/** What the tunnel knows of the app around it, beyond its variables. */
export interface AppFacts {
  /**
   * The paths the app serves itself, as its router declares them (`:param` and a trailing `*`
   * included): its pages, and where its scripts are (`/build/*` for Remix). No route may shadow one.
   */
  hostPaths?: readonly string[];
  /** The release the app reports: CSP reports are filed under it. */
  release?: string;
}

const DEFAULT_MAX_ENVELOPE_BYTES = 20 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RATE_LIMIT_PERIOD_SECONDS = 10;
const DEFAULT_SPOOL_RETRY_SECONDS = 10;

/**
 * The tunnel's settings, read once and checked: throws a {@link ConfigError} naming the first
 * variable that is wrong, so that a bad one stops the Worker when it starts.
 */
export function readTunnelSettings(env: TunnelVariables, { hostPaths = [], release }: AppFacts = {}): TunnelSettings {
  // Renamed: it bounds the whole exchange, not only Sentry's part. A deploy still setting it would
  // otherwise run on the default without a word.
  if ("TUNNEL_UPSTREAM_TIMEOUT_MS" in env) {
    throw new ConfigError("TUNNEL_TIMEOUT_MS", "replaces TUNNEL_UPSTREAM_TIMEOUT_MS, which is still set: rename it");
  }
  const read = variableReader(env);
  const ownDsnText = read.text("SENTRY_DSN");
  const ownDsn = ownDsnText === "" ? undefined : dsn("SENTRY_DSN", ownDsnText);
  const extraDsns = read.list("TUNNEL_ALLOWED_DSNS").map((value) => dsn("TUNNEL_ALLOWED_DSNS", value));
  const allowedDsns = ownDsn ? [ownDsn, ...extraDsns] : extraDsns;
  const sentryPathsFor = read.onOrOff("TUNNEL_SENTRY_PATHS", true) ? allowedDsns : [];
  return {
    allowedDsns,
    allowedOrigins: [...new Set(read.origins("TUNNEL_ALLOWED_ORIGINS"))],
    maxEnvelopeBytes: read.positiveInteger("TUNNEL_MAX_ENVELOPE_BYTES", DEFAULT_MAX_ENVELOPE_BYTES),
    timeoutMs: read.positiveInteger("TUNNEL_TIMEOUT_MS", DEFAULT_TIMEOUT_MS),
    upstreamOrigin: read.optionalOrigin("TUNNEL_UPSTREAM_ORIGIN"),
    rateLimitPeriodSeconds: read.positiveInteger("TUNNEL_RATE_LIMIT_PERIOD_SECONDS", DEFAULT_RATE_LIMIT_PERIOD_SECONDS),
    spoolRetrySeconds: read.positiveInteger("TUNNEL_SPOOL_RETRY_SECONDS", DEFAULT_SPOOL_RETRY_SECONDS),
    logForwarded: read.onOrOff("TUNNEL_LOG_FORWARDED", false),
    ownProject: ownDsn && { dsn: ownDsn, environment: read.text("SENTRY_ENVIRONMENT") || "production", release },
    ...tunnelRoutes(read.text("TUNNEL_ROUTE"), read.list("TUNNEL_RETIRED_ROUTES"), ownDsn, sentryPathsFor, hostPaths),
  };
}

/**
 * The `tunnel` to give a page's Sentry SDK, of any version, that reports with `dsn` (by default the
 * app's own, `SENTRY_DSN`): the route the pages post to, or, when that is the original
 * `/monitoring`, the route with the query naming the DSN's project, which that route requires.
 * `undefined` for a DSN the tunnel does not forward for, or none. A page whose SDK is 11.12 or
 * later can say `tunnel: true` instead, unless `TUNNEL_SENTRY_PATHS=off`.
 */
export function tunnelUrlFor(settings: TunnelSettings, dsn: string | undefined = settings.ownProject?.dsn.text): string | undefined {
  const text = dsn === undefined ? undefined : parseDsn(dsn)?.text;
  const allowed = settings.allowedDsns.find((candidate) => candidate.text === text);
  if (!allowed) return undefined;
  if (settings.route !== TUNNEL_PATH) return settings.route;
  const { org, region, projectId } = projectOf(allowed);
  const query = new URLSearchParams();
  if (org) query.set("o", org);
  query.set("p", projectId);
  if (region) query.set("r", region);
  return `${TUNNEL_PATH}?${query}`;
}

function dsn(variable: TunnelVariable, value: string): Dsn {
  const parsed = parseDsn(value);
  if (!parsed) throw new ConfigError(variable, `is not a valid Sentry DSN (https://<key>@<host>/<project id>): "${value}"`);
  return parsed;
}

/**
 * The route the pages post to, and every route served (decision 016). By default a path derived
 * from the DSN; `TUNNEL_ROUTE` replaces it (`/monitoring`: the original URL, with its query). The
 * default stays served when replaced, and so do `TUNNEL_RETIRED_ROUTES`, so that pages loaded
 * before a change keep delivering; `/monitoring` is always served; and so are Sentry's own paths
 * for `tunnel: true`. No two of them may serve one path: the setting an operator made last in this
 * order (the original, the derived route, `TUNNEL_ROUTE`, `TUNNEL_RETIRED_ROUTES`,
 * `TUNNEL_SENTRY_PATHS`) is the one refused.
 */
function tunnelRoutes(
  chosen: string,
  retiredRoutes: readonly string[],
  ownDsn: Dsn | undefined,
  sentryPathsFor: readonly Dsn[],
  hostPaths: readonly string[],
): Pick<TunnelSettings, "route" | "routes" | "sentryPaths"> {
  const checked = (variable: TunnelVariable, value: string) => {
    const problem = value === TUNNEL_PATH ? undefined : routeProblem(value, hostPaths);
    if (problem) throw new ConfigError(variable, problem);
    return value;
  };
  const derived = ownDsn && derivedRoute(ownDsn.text, hostPaths);
  if (chosen === "" && ownDsn && !derived) {
    throw new ConfigError("TUNNEL_ROUTE", "must be set: the app's own paths claim every path it could be given by default");
  }
  const route = chosen === "" ? (derived ?? TUNNEL_PATH) : checked("TUNNEL_ROUTE", chosen);
  const retired = retiredRoutes.map((value) => checked("TUNNEL_RETIRED_ROUTES", value));
  const sentryPaths = sentryPathsFor.map((allowed) => {
    const path = sentryTunnelPath(allowed.text);
    const problem = hostPathProblem([path], hostPaths);
    if (problem) throw new ConfigError("TUNNEL_SENTRY_PATHS", `is on, and Sentry's own tunnel path for ${allowed.text} ${problem}: set TUNNEL_SENTRY_PATHS=off`);
    return path;
  });
  const sources: RouteSource[] = [
    { route: TUNNEL_PATH, reports: true, variable: undefined, name: "the original route" },
    ...(derived ? [{ route: derived, reports: true, variable: "SENTRY_DSN" as const, name: "the route derived from SENTRY_DSN" }] : []),
    ...(chosen === "" ? [] : [{ route, reports: true, variable: "TUNNEL_ROUTE" as const, name: "TUNNEL_ROUTE" }]),
    ...retired.map((value) => ({ route: value, reports: true, variable: "TUNNEL_RETIRED_ROUTES" as const, name: "the retired route" })),
    ...sentryPaths.map((path) => ({ route: path, reports: false, variable: "TUNNEL_SENTRY_PATHS" as const, name: "Sentry's own tunnel path" })),
  ];
  const collision = routeCollision(sources);
  if (collision) {
    const { later, earlier, path } = collision;
    throw new ConfigError(
      // The later route is always one an operator set: the original and the derived route never collide.
      later.route.variable ?? "TUNNEL_ROUTE",
      `"${later.route.route}" would take ${later.role} at ${path}, where ${earlier.route.name} (${earlier.route.route}) takes ${earlier.role}: ` +
        "one path cannot serve both, and what the pages post there would be refused. Choose a path that is no other route and no route's report path",
    );
  }
  return { route, routes: [...new Set([route, ...(derived ? [derived] : []), ...retired, TUNNEL_PATH])], sentryPaths: [...new Set(sentryPaths)] };
}

/** A served route, and the setting an operator knows it by. */
interface RouteSource extends ServedRoute {
  variable: TunnelVariable | undefined;
  name: string;
}

/**
 * The bindings the tunnel uses, as `wrangler.toml` declares them. Only the request limiter is
 * required: without it any client could spend the project's quota. Without the others the tunnel
 * works: no data points, and nothing stored when Sentry cannot take it.
 */
export interface TunnelBindings {
  /** Workers Rate Limiting, keyed by the client's address: its share of the tunnel and of what the Worker reports. */
  TUNNEL_RATE_LIMITER: Pick<RateLimit, "limit">;
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
