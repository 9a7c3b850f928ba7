/** Where the browser SDK posts its envelopes. */
export const TUNNEL_PATH = "/monitoring";

/** Remix also answers `/monitoring/`; both are the tunnel, and neither is ever traced. */
export function isTunnelPath(pathname: string): boolean {
  return pathname === TUNNEL_PATH || pathname === `${TUNNEL_PATH}/`;
}
