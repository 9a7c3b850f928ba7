/** Where the browser SDK posts its envelopes: the one spelling the tunnel serves. */
export const TUNNEL_PATH = "/monitoring";

/**
 * Whether a path is some spelling of {@link TUNNEL_PATH}: another case, percent-escapes (even
 * doubled), repeated or trailing slashes. Remix's router matches several of these to the tunnel's
 * route; the Worker entry sends them all to the tunnel instead, which serves the exact path only
 * and answers the rest 404, and the Worker's SDK traces none of them.
 */
export function isTunnelPathSpelling(pathname: string): boolean {
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
  return path.toLowerCase().replace(/\/+/g, "/").replace(/\/$/, "") === TUNNEL_PATH;
}

/** Where browsers post Content-Security-Policy violations; the tunnel sends them to the app's own project. */
export const SECURITY_REPORT_PATH = "/monitoring/security-report";
