import { tunnelAnswer, type Answer } from "./answers.ts";
import type { TunnelLogLine } from "./log-line.ts";
import { LIMITER_PERIOD_SECONDS, type ClientLimiter } from "../request/client-limiter.ts";
import { PREFLIGHT_HEADERS } from "../request/cors.ts";
import { allowedQueries, type DsnAllowList } from "../upstream/allow-list.ts";
import { isSentryPathShape, TUNNEL_PATH, tunnelPaths, type TunnelPaths } from "../request/path.ts";
import { hostPathProblem } from "../request/route.ts";
import { parseTunnelQuery, type TunnelQuery } from "../request/query.ts";
import { projectOf, securityEndpointFor, upstreamUrlFor } from "../upstream/ingest.ts";
import type { TunnelSettings } from "../setup/settings.ts";
import { TUNNEL_RESPONSE_HEADERS } from "../upstream/header-policy.ts";

/** Where CSP reports go, and the project their log lines name. */
export interface ReportTarget {
  url: string;
  project: TunnelQuery;
  /** The app's own DSN: Sentry's limits and the client reports of its reports are kept under it. */
  dsn: string;
  /** Its envelope endpoint, whose breaker the reports share: one ingest takes both. */
  upstreamUrl: string;
}

/** What the first stage checks against, built once per tunnel. */
export interface Gate {
  clientAllowed: ClientLimiter;
  /** Every route's path and its CSP report path, exactly as served. */
  paths: TunnelPaths;
  /**
   * Whether a `tunnel: true` page whose DSN is not allowed is answered here, at its own Sentry
   * path, rather than by the host: when Sentry's paths are served, outside the host's own paths.
   */
  answersOtherSentryPaths: boolean;
  hostPaths: readonly string[];
  /** Partner origins, which get CORS. */
  partners: ReadonlySet<string>;
  /** `undefined` without CSP reports, or a project of the app's own: the report paths are then not served. */
  reports: ReportTarget | undefined;
  namesAllowedProject: (query: TunnelQuery) => boolean;
  /** Told to a client over its limit: Sentry's own header, no categories meaning every one, so the SDK holds back everything. */
  limitedHeaders: Record<string, string>;
  allowHeader: Record<string, string>;
}

/** The gate of a tunnel; `servesReports` when it was given CSP reports, which go to its own project. */
export function createGate(settings: TunnelSettings, clientAllowed: ClientLimiter, allowList: DsnAllowList, servesReports: boolean): Gate {
  const period = String(LIMITER_PERIOD_SECONDS);
  const partners = new Set(settings.allowedOrigins);
  const own = servesReports ? settings.ownProject : undefined;
  return {
    clientAllowed,
    paths: tunnelPaths(settings.routes, settings.sentryPaths),
    answersOtherSentryPaths: settings.sentryPaths.length > 0,
    hostPaths: settings.hostPaths,
    partners,
    reports: own && {
      url: securityEndpointFor(own, settings.upstreamOrigin),
      project: projectOf(own.dsn),
      dsn: own.dsn.text,
      upstreamUrl: upstreamUrlFor(own.dsn, settings.upstreamOrigin),
    },
    namesAllowedProject: allowedQueries(allowList),
    limitedHeaders: { "retry-after": period, "x-sentry-rate-limits": `${period}::key` },
    allowHeader: { allow: partners.size > 0 ? "POST, OPTIONS" : "POST" },
  };
}

export type Admission =
  | { admitted: false; kind: TunnelLogLine["kind"]; answer: Answer }
  /**
   * `query` is the original route's; the other routes take none, and the DSN alone names the
   * project. `otherSentryPath`: posted where Sentry's SDK sends for a DSN whose path is not served.
   */
  | { admitted: true; kind: "envelope"; query: TunnelQuery | undefined; otherSentryPath?: true }
  | { admitted: true; kind: "security_report"; target: ReportTarget };

/**
 * The first stage: every check that needs no body, cheapest and most telling first. The client's
 * share is spent only on a request its own pages could have sent: what another
 * site's page can make a browser send, a request to a path not served, from a foreign origin or by
 * another method, is refused before the limiter is asked, and so costs the visitor nothing.
 */
// Decision 028.
export async function admit(request: Request, gate: Gate): Promise<Admission> {
  const url = new URL(request.url);
  const kind = kindAt(url.pathname, gate);
  const report = kind === "security_report" ? gate.reports : undefined;
  const answered = (answer: Answer): Admission => ({ admitted: false, kind, answer });
  const served = report !== undefined || gate.paths.envelopes.has(url.pathname);
  const otherSentryPath = !served && postsToOtherSentryPath(request, url.pathname, gate);
  if (!served && !otherSentryPath) return answered(tunnelAnswer("not_found", undefined, notFoundSentence(url.pathname)));

  const origin = request.headers.get("origin");
  const partner = origin !== null && gate.partners.has(origin);
  if (origin !== null && !partner && origin !== url.origin) return answered(tunnelAnswer("origin_not_allowed"));
  if (request.method === "OPTIONS" && partner) {
    const response = new Response(null, { status: 204, headers: { ...TUNNEL_RESPONSE_HEADERS, ...PREFLIGHT_HEADERS } });
    return answered({ response, code: null, outcome: "preflight" });
  }
  if (request.method !== "POST") return answered(tunnelAnswer("method_not_allowed", gate.allowHeader));
  if (!(await gate.clientAllowed(request.headers.get("cf-connecting-ip")))) return answered(tunnelAnswer("rate_limited", gate.limitedHeaders));
  if (report) return { admitted: true, kind: "security_report", target: report };

  // Nothing in the URL may mean something the tunnel ignores.
  if (url.pathname !== TUNNEL_PATH) {
    if (url.search !== "") return answered(tunnelAnswer("invalid_query", undefined, NO_QUERY_SENTENCE));
    return otherSentryPath ? { admitted: true, kind: "envelope", query: undefined, otherSentryPath } : { admitted: true, kind: "envelope", query: undefined };
  }
  const query = parseTunnelQuery(url.searchParams);
  if (!query) return answered(tunnelAnswer("invalid_query"));
  return gate.namesAllowedProject(query) ? { admitted: true, kind: "envelope", query } : answered(tunnelAnswer("query_not_allowed"));
}

const NO_QUERY_SENTENCE = "This route takes no query: the envelope's DSN names its project.";

/** Said of a path not served: the path asked, as far as a sentence should repeat it. */
export function notFoundSentence(pathname: string): string {
  const shown = pathname.length > 120 ? `${pathname.slice(0, 120)}…` : pathname;
  return `The tunnel serves nothing at ${shown}: its routes are answered only as the pages are told to spell them.`;
}

/**
 * Whether a request is what Sentry's browser SDK sends with `tunnel: true` for a DSN whose path
 * this tunnel does not serve: a POST of `application/x-sentry-envelope` to a path of that shape
 * that the host does not claim. It is answered here, 403 for the DSN it names, so that the
 * operator sees it in the tunnel's line and data point instead of the host's 404 or 405.
 */
export function postsToOtherSentryPath(request: Request, pathname: string, gate: Pick<Gate, "answersOtherSentryPaths" | "hostPaths">): boolean {
  if (!gate.answersOtherSentryPaths || request.method !== "POST" || !isSentryPathShape(pathname)) return false;
  const type = request.headers.get("content-type");
  if (type === null || type.split(";", 1)[0]!.trim().toLowerCase() !== "application/x-sentry-envelope") return false;
  return hostPathProblem([pathname.replace(/\/$/, "")], gate.hostPaths) === undefined;
}

/** What a request to `pathname` posts, for its log line: a CSP report to a report path the app serves, an envelope otherwise. */
export function kindAt(pathname: string, gate: Gate): TunnelLogLine["kind"] {
  return gate.reports && gate.paths.reports.has(pathname) ? "security_report" : "envelope";
}
