/**
 * `@edge-monitoring/tunnel/csp`: browsers' Content-Security-Policy reports, taken at each route's
 * report path (`<route>/csp`, and `/monitoring/security-report`) and sent to the app's own project
 * (the tunnel's `dsn`), held by the same limits as envelopes. A Worker that does not import it
 * does not carry it, and does not serve those paths.
 */
import { BUILD, type TunnelCapability } from "./capability.ts";
import { forwardSecurityReport } from "./forward-report.ts";

/** CSP reports, for a tunnel's `cspReports` option: `createTunnel({ …, cspReports: cspReports() })`. */
export function cspReports(): TunnelCapability<"csp"> {
  return { kind: "csp", [BUILD]: () => ({ forward: forwardSecurityReport }) };
}
