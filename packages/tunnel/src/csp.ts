/**
 * `@edge-monitoring/tunnel/csp`: browsers' Content-Security-Policy reports, taken at each route's
 * report path (`<route>/csp`, and `/monitoring/security-report`) and sent to the app's own project
 * (the tunnel's `dsn`), held by the same limits as envelopes. A Worker that does not import it
 * does not carry it, and does not serve those paths.
 */
import { BUILD, type TunnelCapability } from "./setup/capability.ts";
import { forwardSecurityReport } from "./stages/forward-report.ts";
import { KEEP_STAGE } from "./stages/keep.ts";
import { upstreamStateOf } from "./upstream/state.ts";

/** CSP reports, for a tunnel's `cspReports` option: `createTunnel({ …, cspReports: cspReports() })`. */
export function cspReports(): TunnelCapability<"csp"> {
  return {
    kind: "csp",
    [BUILD]: ({ allowList, now, reports }) => {
      const upstream = upstreamStateOf(allowList, now);
      return {
        forward: (request, deadline, target, delivery) => forwardSecurityReport(request, deadline, target, delivery, upstream),
        // Envelopes' answers say whether the ingest, which takes the reports too, is failing or limiting.
        keep: { stage: KEEP_STAGE, parts: { ...upstream, reports, store: undefined } },
      };
    },
  };
}
