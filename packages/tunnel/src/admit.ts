import { tunnelAnswer, type Answer } from "./answers.ts";
import type { TunnelLogLine } from "./log-line.ts";
import type { ClientLimiter } from "./request/client-limiter.ts";
import { PREFLIGHT_HEADERS } from "./request/cors.ts";
import { allowedQueries, type DsnAllowList } from "./upstream/allow-list.ts";
import { TUNNEL_PATH, tunnelPaths, type TunnelPaths } from "./request/path.ts";
import { parseTunnelQuery, type TunnelQuery } from "./request/query.ts";
import { projectOf, queryOf, securityEndpointFor, upstreamUrlFor } from "./upstream/ingest.ts";
import type { TunnelSettings } from "./settings.ts";
import { TUNNEL_RESPONSE_HEADERS } from "./upstream/header-policy.ts";

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
  /** Partner origins, which get CORS. */
  partners: ReadonlySet<string>;
  /** `undefined` when the app has no project of its own: the report path is then not served. */
  reports: ReportTarget | undefined;
  namesAllowedProject: (query: TunnelQuery) => boolean;
  /** Told to a client over its limit: Sentry's own header, no categories meaning every one, so the SDK holds back everything. */
  limitedHeaders: Record<string, string>;
  allowHeader: Record<string, string>;
}

export function createGate(settings: TunnelSettings, clientAllowed: ClientLimiter, allowList: DsnAllowList): Gate {
  const period = String(settings.rateLimitPeriodSeconds);
  const partners = new Set(settings.allowedOrigins);
  const own = settings.ownProject;
  return {
    clientAllowed,
    paths: tunnelPaths(settings.routes, settings.sentryPaths),
    partners,
    reports: own && {
      url: securityEndpointFor(own, settings.upstreamOrigin),
      project: queryOf(projectOf(own.dsn)),
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
  /** `query` is the original route's; the other routes take none, and the DSN alone names the project. */
  | { admitted: true; kind: "envelope"; query: TunnelQuery | undefined }
  | { admitted: true; kind: "security_report"; target: ReportTarget };

/**
 * The first stage: every check that needs no body, cheapest and most telling first. The limiter
 * sees every request, refused ones included, so that refusals count against a client too.
 */
export async function admit(request: Request, gate: Gate): Promise<Admission> {
  const url = new URL(request.url);
  const kind = kindAt(url.pathname, gate);
  const report = kind === "security_report" ? gate.reports : undefined;
  const answered = (answer: Answer): Admission => ({ admitted: false, kind, answer });
  if (!(await gate.clientAllowed(request.headers.get("cf-connecting-ip")))) return answered(tunnelAnswer("rate_limited", gate.limitedHeaders));
  if (!report && !gate.paths.envelopes.has(url.pathname)) return answered(tunnelAnswer("not_found"));

  const origin = request.headers.get("origin");
  const partner = origin !== null && gate.partners.has(origin);
  if (origin !== null && !partner && origin !== url.origin) return answered(tunnelAnswer("origin_not_allowed"));
  if (request.method === "OPTIONS" && partner) {
    const response = new Response(null, { status: 204, headers: { ...TUNNEL_RESPONSE_HEADERS, ...PREFLIGHT_HEADERS } });
    return answered({ response, code: null, outcome: "preflight" });
  }
  if (request.method !== "POST") return answered(tunnelAnswer("method_not_allowed", gate.allowHeader));
  if (report) return { admitted: true, kind: "security_report", target: report };

  // Nothing in the URL may mean something the tunnel ignores.
  if (url.pathname !== TUNNEL_PATH) return url.search === "" ? { admitted: true, kind: "envelope", query: undefined } : answered(tunnelAnswer("invalid_query"));
  const query = parseTunnelQuery(url.searchParams);
  if (!query) return answered(tunnelAnswer("invalid_query"));
  return gate.namesAllowedProject(query) ? { admitted: true, kind: "envelope", query } : answered(tunnelAnswer("query_not_allowed"));
}

/** What a request to `pathname` posts, for its log line: a CSP report to a report path the app serves, an envelope otherwise. */
export function kindAt(pathname: string, gate: Gate): TunnelLogLine["kind"] {
  return gate.reports && gate.paths.reports.has(pathname) ? "security_report" : "envelope";
}
