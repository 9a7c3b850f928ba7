/**
 * The original route, `POST /monitoring?o=<org>&p=<project>[&r=<region>]`: always served, for
 * clients configured that way, though EasyPrivacy blocks it (`/monitoring?o=$xmlhttprequest`).
 */
export const TUNNEL_PATH = "/monitoring";

/** Where browsers post Content-Security-Policy violations beside the original route. */
export const SECURITY_REPORT_PATH = "/monitoring/security-report";

/** Where a route's CSP reports go; the tunnel sends them to the app's own project. */
export function reportPathOf(route: string): string {
  return route === TUNNEL_PATH ? SECURITY_REPORT_PATH : `${route}/csp`;
}

/** The exact paths one tunnel answers, made once from its routes. */
export interface TunnelPaths {
  /** Each route, and Sentry's own tunnel paths; only {@link TUNNEL_PATH} takes the `?o=&p=&r=` query, the others take none. */
  envelopes: ReadonlySet<string>;
  reports: ReadonlySet<string>;
}

/**
 * `sentryPaths` take envelopes only: Sentry's SDK sends no CSP report beside them. Each is served
 * with a trailing slash too, as Sentry's own tunnel serves it, for `tunnel: { trailingSlash: true }`.
 */
export function tunnelPaths(routes: readonly string[], sentryPaths: readonly string[] = []): TunnelPaths {
  const all = [...new Set([TUNNEL_PATH, ...routes])];
  return { envelopes: new Set([...all, ...sentryPaths, ...sentryPaths.map((path) => `${path}/`)]), reports: new Set(all.map(reportPathOf)) };
}

/** The shape of Sentry's own tunnel path, `/` and a 32-bit hash in base 36, with or without a trailing slash. */
export function isSentryPathShape(pathname: string): boolean {
  return /^\/[0-9a-z]{1,7}\/?$/.test(pathname);
}

/**
 * Whether a path is some spelling of one the tunnel answers (by default, of `/monitoring` alone;
 * given the tunnel's paths, of every one of them): another case, percent-escapes (even
 * doubled), repeated or trailing slashes. Remix's router matches several of these to its routes;
 * the Worker entry sends them all to the tunnel instead, which serves the exact paths only and
 * answers the rest 404, and the Worker's SDK traces none of them. Routes are lowercase, so a
 * lowercased spelling can be compared with them.
 */
export function isTunnelPathSpelling(pathname: string, paths: TunnelPaths = ORIGINAL_ONLY): boolean {
  const path = canonicalPath(pathname);
  return paths.envelopes.has(path) || paths.reports.has(path);
}

const ORIGINAL_ONLY = tunnelPaths([]);

function canonicalPath(pathname: string): string {
  let path = pathname;
  for (let round = 0; round < 3; round += 1) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      break;
    }
    if (decoded === path) break;
    path = decoded;
  }
  return path.toLowerCase().replace(/\/+/g, "/").replace(/\/$/, "");
}
