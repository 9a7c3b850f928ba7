import { SECURITY_REPORT_PATH, TUNNEL_PATH } from "./request/path.ts";
import { hostPathProblem, derivedRoute, routeCollision, routeProblem, sentryTunnelPath, type ServedRoute } from "./request/route.ts";
import { ConfigError, variableReader, type VariableValue } from "./shared/variables.ts";
import { readSpoolQueues } from "./spool/queues.ts";
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
  /** The host's own paths (`AppFacts.hostPaths`), which no route shadows and the tunnel never answers. */
  hostPaths: readonly string[];
  /** The rate limiter's period: how long a limited client is told to wait. */
  rateLimitPeriodSeconds: number;
  /**
   * Whether clients are held to a share (`TUNNEL_RATE_LIMITER`, the spool's budgets): on unless the operator
   * says there is to be no limit, so that a binding left out stops the Worker instead of lifting every limit.
   */
  rateLimiting: boolean;
  /** The spool's queue and its dead-letter queue, whose batches alone `queue()` takes, and their `max_retries` (`spool/queues.ts`). */
  spoolQueue: string;
  deadLetterQueue: string;
  spoolMaxRetries: number;
  /** The spool's first retry delay; each further attempt waits twice as long, up to an hour. */
  spoolRetrySeconds: number;
  /** How long the oldest stored envelope may wait before the spool's heartbeat says `stale`. */
  spoolMaxAgeSeconds: number;
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
    | "TUNNEL_RATE_LIMITING"
    | "TUNNEL_SPOOL_QUEUE_NAME"
    | "TUNNEL_DEAD_LETTER_QUEUE_NAME"
    | "TUNNEL_SPOOL_MAX_RETRIES"
    | "TUNNEL_SPOOL_RETRY_SECONDS"
    | "TUNNEL_SPOOL_MAX_AGE_SECONDS"
    | "TUNNEL_ROUTE"
    | "TUNNEL_RETIRED_ROUTES"
    | "TUNNEL_SENTRY_PATHS"
    | "TUNNEL_LOG_FORWARDED",
    VariableValue
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
/** An hour: Sentry failing that long, or a consumer stuck, is worth an alert. */
const DEFAULT_SPOOL_MAX_AGE_SECONDS = 3600;

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
    hostPaths,
    maxEnvelopeBytes: read.positiveInteger("TUNNEL_MAX_ENVELOPE_BYTES", DEFAULT_MAX_ENVELOPE_BYTES),
    timeoutMs: read.positiveInteger("TUNNEL_TIMEOUT_MS", DEFAULT_TIMEOUT_MS),
    upstreamOrigin: read.optionalOrigin("TUNNEL_UPSTREAM_ORIGIN"),
    rateLimitPeriodSeconds: read.positiveInteger("TUNNEL_RATE_LIMIT_PERIOD_SECONDS", DEFAULT_RATE_LIMIT_PERIOD_SECONDS),
    rateLimiting: read.onOrOff("TUNNEL_RATE_LIMITING", true),
    ...readSpoolQueues(read),
    spoolRetrySeconds: read.positiveInteger("TUNNEL_SPOOL_RETRY_SECONDS", DEFAULT_SPOOL_RETRY_SECONDS),
    spoolMaxAgeSeconds: read.positiveInteger("TUNNEL_SPOOL_MAX_AGE_SECONDS", DEFAULT_SPOOL_MAX_AGE_SECONDS),
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
  // The original route is always served: a page the host names there would never be reached. A
  // pattern (`/:slug`) names no page there: the tunnel takes that one value of it, as it always has.
  const claimed = hostPaths.find((pattern) => namesOriginalRoute(pattern));
  if (claimed !== undefined) {
    throw new ConfigError(
      "hostPaths",
      `names "${claimed}", which takes ${TUNNEL_PATH} or ${SECURITY_REPORT_PATH}: the tunnel's original route and its CSP report path are always served, so that page would never be reached`,
    );
  }
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

/** Whether a host's path names the original route or its report path, by its first segment: not a pattern's parameter. */
function namesOriginalRoute(pattern: string): boolean {
  const [first] = pattern.split("/").filter((segment) => segment !== "");
  return first?.toLowerCase() === TUNNEL_PATH.slice(1) && hostPathProblem([TUNNEL_PATH, SECURITY_REPORT_PATH], [pattern]) !== undefined;
}

/** A served route, and the setting an operator knows it by. */
interface RouteSource extends ServedRoute {
  variable: TunnelVariable | undefined;
  name: string;
}
