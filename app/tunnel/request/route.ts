import { reportPathOf, TUNNEL_PATH } from "./path";

/**
 * Words that generic filter rules key on, in paths or queries: EasyPrivacy's
 * `/monitoring?o=$xmlhttprequest` and `/api/sentry/tunnel$xmlhttprequest`, `/?sentry_key=`, and
 * the tracking vocabulary its generic rules are written in. A route holding one is the next to be
 * blocked on every site at once (decision 016).
 */
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
 * Why a path cannot be a route, or `undefined` when it can. `pages` are the app's page paths as
 * its router declares them (`:param` and a trailing `*` included); the root catch-all, the 404
 * page, shadows nothing.
 */
export function routeProblem(route: string, pages: readonly string[]): string | undefined {
  if (!ROUTE_SHAPE.test(route)) {
    return `must be a path such as /k7q2x9: one to four segments of lowercase letters, digits, - and _, with no query, got "${route}"`;
  }
  const word = FLAGGED_WORDS.find((flagged) => route.includes(flagged));
  if (word) return `holds "${word}", a word that generic ad-blocker rules block on: choose a neutral path, got "${route}"`;
  if (route === "/build" || route.startsWith("/build/")) return `would shadow /build/, where the app's scripts are served, got "${route}"`;
  for (const own of [route, reportPathOf(route)]) {
    const page = pages.find((pattern) => shadows(own, pattern));
    if (page !== undefined) return `would shadow the page ${page}, got "${route}"`;
  }
  return undefined;
}

/** Whether serving `path` would take requests from the page `pattern`, or from pages below it. */
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
export function derivedRoute(dsn: string, pages: readonly string[]): string | undefined {
  // A flagged word turns up in about one candidate in 5,000; only pages such as `/:slug` can
  // claim every candidate, and then the operator has to choose.
  for (let salt = 0; salt < MAX_SALTS; salt += 1) {
    const candidate = `/${fnv1a64(`${salt}\n${dsn}`).toString(36).padStart(13, "0").slice(-10)}`;
    if (candidate !== TUNNEL_PATH && routeProblem(candidate, pages) === undefined) return candidate;
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
export type PathRole = "envelopes" | "CSP reports";

/** Two routes that would serve one path: `later` is the one listed after `earlier`. */
export interface RouteCollision<Route extends { route: string }> {
  path: string;
  earlier: { route: Route; role: PathRole };
  later: { route: Route; role: PathRole };
}

/**
 * The first path two routes would both serve, or `undefined`. Each route serves two exact paths,
 * itself for envelopes and its report path for CSP reports, and every path is checked against
 * every other: a route that is another's report path (`/a` and `/a/csp`) would have pages post
 * envelopes where CSP reports are taken, and each would be refused. The same route listed twice
 * serves the same paths, which is no collision.
 */
export function routeCollision<Route extends { route: string }>(routes: readonly Route[]): RouteCollision<Route> | undefined {
  const served = new Map<string, { route: Route; role: PathRole }>();
  for (const route of routes) {
    for (const [path, role] of [
      [route.route, "envelopes"],
      [reportPathOf(route.route), "CSP reports"],
    ] as const) {
      const earlier = served.get(path);
      if (!earlier) served.set(path, { route, role });
      else if (earlier.route.route !== route.route) return { path, earlier, later: { route, role } };
    }
  }
  return undefined;
}
