import { SECURITY_REPORT_PATH, TUNNEL_PATH } from "../request/path.ts";
import { hostPathProblem, derivedRoute, routeCollision, routeProblem, sentryTunnelPath, type ServedRoute } from "../request/route.ts";
import type { CoreOptions } from "./core-options.ts";
import { checks, type Limiter, type SettingNames } from "../shared/checks.ts";
import { ConfigError } from "../shared/variables.ts";
import { parseDsn, type Dsn } from "../upstream/dsn.ts";
import { projectOf, type OwnProject } from "../upstream/ingest.ts";

/** The tunnel's settings, as {@link settingsOf} checks them from its options. */
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
   * allowed DSN, also served (envelopes only, no query, no report path); none when `sentryPaths` is off.
   */
  sentryPaths: readonly string[];
  /** The host's own paths, which no route shadows and the tunnel never answers. */
  hostPaths: readonly string[];
  /** The per-client limiter; `undefined` when the operator said `"off"`, and then no budget is asked either. */
  limiter: Limiter | undefined;
  /**
   * Whether an envelope Sentry took (2xx) and a partner's preflight get a log line too: when asked,
   * and when no Analytics Engine dataset is bound, whose data point would otherwise count it. Off
   * otherwise: each would be a second Workers Logs event per envelope, priced above the request
   * itself. Every refusal, failure and spool decision has its line either way.
   */
  logForwarded: boolean;
  /** Whether it was asked for, rather than implied by no dataset: the start line says which. */
  logForwardedAsked: boolean;
  /** The app's own project: CSP reports go there, and the spool counts there what it drops of DSNs no longer allowed. */
  ownProject: OwnProject | undefined;
}

const DEFAULT_MAX_ENVELOPE_BYTES = 20 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The tunnel's settings, checked: throws a {@link ConfigError} naming the first option that is
 * wrong (by `names`, the variable it was read from), so that a bad one stops the Worker when it starts.
 */
export function settingsOf(options: CoreOptions, names: SettingNames): TunnelSettings {
  const check = checks(names);
  const ownDsn = options.dsn ? dsn(names("dsn"), options.dsn) : undefined;
  const extraDsns = (options.allowedDsns ?? []).map((value) => dsn(names("allowedDsns"), value));
  const allowedDsns = ownDsn ? [ownDsn, ...extraDsns] : extraDsns;
  const hostPaths = options.hostPaths ?? [];
  const logForwardedAsked = options.logForwarded ?? false;
  return {
    allowedDsns,
    allowedOrigins: [...new Set((options.allowedOrigins ?? []).map((value) => check.origin("allowedOrigins", value)))],
    hostPaths,
    maxEnvelopeBytes: check.positiveInteger("maxEnvelopeBytes", options.maxEnvelopeBytes, DEFAULT_MAX_ENVELOPE_BYTES),
    timeoutMs: check.positiveInteger("timeoutMs", options.timeoutMs, DEFAULT_TIMEOUT_MS),
    upstreamOrigin: options.upstreamOrigin ? check.origin("upstreamOrigin", options.upstreamOrigin) : undefined,
    limiter: options.limiter === "off" ? undefined : check.limiter("limiter", options.limiter),
    logForwarded: logForwardedAsked || options.analytics === undefined,
    logForwardedAsked,
    ownProject: ownDsn && { dsn: ownDsn, environment: options.environment || "production", release: options.release },
    ...tunnelRoutes(options, ownDsn, (options.sentryPaths ?? true) ? allowedDsns : [], hostPaths, names),
  };
}

/**
 * The `tunnel` to give a page's Sentry SDK, of any version, that reports with `dsn` (by default the
 * app's own): the route the pages post to, or, when that is the original `/monitoring`, the route
 * with the query naming the DSN's project, which that route requires. `undefined` for a DSN the
 * tunnel does not forward for, or none.
 */
export function tunnelUrlFor(settings: TunnelSettings, dsn: string | undefined = settings.ownProject?.dsn.text): string | undefined {
  const text = dsn === undefined ? undefined : parseDsn(dsn)?.text;
  const allowed = settings.allowedDsns.find((candidate) => candidate.text === text);
  if (!allowed) return undefined;
  if (settings.route !== TUNNEL_PATH) return settings.route;
  const { org, region, project } = projectOf(allowed);
  const query = new URLSearchParams();
  if (org) query.set("o", org);
  query.set("p", project);
  if (region) query.set("r", region);
  return `${TUNNEL_PATH}?${query}`;
}

function dsn(variable: string, value: string): Dsn {
  const parsed = parseDsn(value);
  if (!parsed) throw new ConfigError(variable, `is not a valid Sentry DSN (https://<key>@<host>/<project id>): "${value}"`);
  return parsed;
}

/**
 * The route the pages post to, and every route served (decision 016). By default a path derived
 * from the DSN; `route` replaces it (`/monitoring`: the original URL, with its query). The default
 * stays served when replaced, and so do `retiredRoutes`, so that pages loaded before a change keep
 * delivering; `/monitoring` is always served; and so are Sentry's own paths for `tunnel: true`. No
 * two of them may serve one path: the setting an operator made last in this order (the original,
 * the derived route, `route`, `retiredRoutes`, `sentryPaths`) is the one refused.
 */
function tunnelRoutes(
  options: Pick<CoreOptions, "route" | "retiredRoutes">,
  ownDsn: Dsn | undefined,
  sentryPathsFor: readonly Dsn[],
  hostPaths: readonly string[],
  names: SettingNames,
): Pick<TunnelSettings, "route" | "routes" | "sentryPaths"> {
  const chosen = options.route ?? "";
  // The original route is always served: a page the host names there would never be reached. A
  // pattern (`/:slug`) names no page there: the tunnel takes that one value of it, as it always has.
  const claimed = hostPaths.find((pattern) => namesOriginalRoute(pattern));
  if (claimed !== undefined) {
    throw new ConfigError(
      names("hostPaths"),
      `names "${claimed}", which takes ${TUNNEL_PATH} or ${SECURITY_REPORT_PATH}: the tunnel's original route and its CSP report path are always served, so that page would never be reached`,
    );
  }
  const checked = (option: string, value: string) => {
    const problem = value === TUNNEL_PATH ? undefined : routeProblem(value, hostPaths);
    if (problem) throw new ConfigError(names(option), problem);
    return value;
  };
  const derived = ownDsn && derivedRoute(ownDsn.text, hostPaths);
  if (chosen === "" && ownDsn && !derived) {
    throw new ConfigError(names("route"), "must be set: the app's own paths claim every path it could be given by default");
  }
  const route = chosen === "" ? (derived ?? TUNNEL_PATH) : checked("route", chosen);
  const retired = (options.retiredRoutes ?? []).map((value) => checked("retiredRoutes", value));
  const sentryPaths = sentryPathsFor.map((allowed) => {
    const path = sentryTunnelPath(allowed.text);
    const problem = hostPathProblem([path], hostPaths);
    if (problem) throw new ConfigError(names("sentryPaths"), `is on, and Sentry's own tunnel path for ${allowed.text} ${problem}: turn ${names("sentryPaths")} off`);
    return path;
  });
  const sources: RouteSource[] = [
    { route: TUNNEL_PATH, reports: true, option: undefined, name: "the original route" },
    ...(derived ? [{ route: derived, reports: true, option: "dsn", name: `the route derived from ${names("dsn")}` }] : []),
    ...(chosen === "" ? [] : [{ route, reports: true, option: "route", name: names("route") }]),
    ...retired.map((value) => ({ route: value, reports: true, option: "retiredRoutes", name: "the retired route" })),
    ...sentryPaths.map((path) => ({ route: path, reports: false, option: "sentryPaths", name: "Sentry's own tunnel path" })),
  ];
  const collision = routeCollision(sources);
  if (collision) {
    const { later, earlier, path } = collision;
    throw new ConfigError(
      // The later route is always one an operator set: the original and the derived route never collide.
      names(later.route.option ?? "route"),
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

/** A served route, and the option an operator set it by. */
interface RouteSource extends ServedRoute {
  option: string | undefined;
  name: string;
}
