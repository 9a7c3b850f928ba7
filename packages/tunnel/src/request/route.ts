import { reportPathOf, TUNNEL_PATH } from "./path.ts";

/**
 * Words that generic filter rules key on, in paths or queries: EasyPrivacy's
 * `/monitoring?o=$xmlhttprequest` and `/api/sentry/tunnel$xmlhttprequest`, `/?sentry_key=`, and
 * the tracking vocabulary its generic rules are written in. A route holding one is the next to be
 * blocked on every site at once.
 */
// Decision 016.
export const FLAGGED_WORDS: readonly string[] = [
  "monitoring",
  "sentry",
  "tunnel",
  "telemetry",
  "track",
  "collect",
  "log",
  "metrics",
  "beacon",
  "analytics",
  "events",
  "envelope",
];

/** One to four segments of lowercase letters, digits, `-` and `_`: no query, no dot, nothing to escape. */
const ROUTE_SHAPE = /^(?:\/[a-z0-9][a-z0-9_-]{0,31}){1,4}$/;

/**
 * Why a path cannot be a route, or `undefined` when it can. `hostPaths` are the paths the host
 * serves itself, as its router declares them (`:param` and a trailing `*` included); the root
 * catch-all, a 404 page, shadows nothing.
 */
export function routeProblem(route: string, hostPaths: readonly string[]): string | undefined {
  if (!ROUTE_SHAPE.test(route)) {
    return `must be a path such as /k7q2x9: one to four segments of lowercase letters, digits, - and _, with no query, got "${route}"`;
  }
  const word = FLAGGED_WORDS.find((flagged) => route.includes(flagged));
  if (word) return `holds "${word}", a word that generic ad-blocker rules block on: choose a neutral path, got "${route}"`;
  return hostPathProblem([route, reportPathOf(route)], hostPaths);
}

/**
 * Why serving these exact paths would take requests from the host, or `undefined` when it would
 * not. The host names what it serves, its pages and where its scripts are (`/build/*` for Remix):
 * the tunnel reserves nothing of its own.
 */
export function hostPathProblem(paths: readonly string[], hostPaths: readonly string[]): string | undefined {
  const [served] = paths;
  for (const own of paths) {
    const taken = hostPaths.find((pattern) => shadows(own, pattern));
    if (taken !== undefined) return `would shadow ${taken}, which the app serves, got "${served}"`;
  }
  return undefined;
}

/** Whether serving `path` would take requests from the host's `pattern`, or from paths below it. */
function shadows(path: string, pattern: string): boolean {
  const wanted = path.split("/").slice(1);
  const declared = pattern.split("/").filter((segment) => segment !== "");
  if (declared.length === 1 && declared[0] === "*") return false;
  for (const [index, segment] of wanted.entries()) {
    const page = declared[index];
    if (page === undefined) return false;
    if (page === "*") return true;
    if (!page.startsWith(":") && page.toLowerCase() !== segment) return false;
  }
  // The whole path matched: the page itself, or a page below it.
  return true;
}

/**
 * The default route, derived from the app's DSN: different for every install, meaningless to a
 * filter list, and the same across deploys for as long as the DSN is; `undefined` when the app's
 * pages claim every candidate. The derivation must never change: a page loaded before a deploy
 * posts to the route it was given.
 */
export function derivedRoute(dsn: string, hostPaths: readonly string[]): string | undefined {
  // A flagged word turns up in about one candidate in 5,000; only paths such as `/:slug` can
  // claim every candidate, and then the operator has to choose.
  for (let salt = 0; salt < MAX_SALTS; salt += 1) {
    const candidate = `/${fnv1a64(`${salt}\n${dsn}`).toString(36).padStart(13, "0").slice(-10)}`;
    if (candidate !== TUNNEL_PATH && routeProblem(candidate, hostPaths) === undefined) return candidate;
  }
  return undefined;
}

const MAX_SALTS = 16;

/** FNV-1a, 64 bits: stable, synchronous, and enough to tell installs apart. Not a secret. */
function fnv1a64(text: string): bigint {
  let hash = 0xcbf29ce484222325n;
  for (const byte of new TextEncoder().encode(text)) {
    hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash;
}

/** What one exact path is to the tunnel: where a route takes envelopes, or its CSP reports. */
type PathRole = "envelopes" | "CSP reports";

/** A route, and whether it has a report path: Sentry's own tunnel path takes envelopes only. */
export interface ServedRoute {
  route: string;
  reports: boolean;
}

/** Two routes that would serve one path: `later` is the one listed after `earlier`. */
interface RouteCollision<Route extends ServedRoute> {
  path: string;
  earlier: { route: Route; role: PathRole };
  later: { route: Route; role: PathRole };
}

/**
 * The first path two routes would both serve, or `undefined`. Each route serves itself for
 * envelopes and, but for Sentry's own path, its report path for CSP reports; every path is checked
 * against every other: a route that is another's report path (`/a` and `/a/csp`) would have pages post
 * envelopes where CSP reports are taken, and each would be refused. The same route listed twice
 * serves the same paths, which is no collision.
 */
export function routeCollision<Route extends ServedRoute>(routes: readonly Route[]): RouteCollision<Route> | undefined {
  const served = new Map<string, { route: Route; role: PathRole }>();
  for (const route of routes) {
    const paths: [string, PathRole][] = [[route.route, "envelopes"]];
    if (route.reports) paths.push([reportPathOf(route.route), "CSP reports"]);
    for (const [path, role] of paths) {
      const earlier = served.get(path);
      if (!earlier) served.set(path, { route, role });
      else if (earlier.route.route !== route.route) return { path, earlier, later: { route, role } };
    }
  }
  return undefined;
}

/**
 * The path Sentry's own browser SDK (11.12 and later) posts to with `tunnel: true`, and its server
 * tunnel serves: `/` and the DSN's 32-bit FNV-1a in base 36, over the DSN as the SDK writes it
 * (`dsnToString`, as the allow-list keys DSNs). The SDK computes it in the browser; it must never
 * differ from `@sentry/core`'s `getTunnelPath` (a test holds them together).
 */
export function sentryTunnelPath(dsnText: string): string {
  let hash = 0x811c9dc5;
  for (let index = 0; index < dsnText.length; index += 1) hash = Math.imul(hash ^ dsnText.charCodeAt(index), 0x01000193);
  return `/${(hash >>> 0).toString(36)}`;
}
