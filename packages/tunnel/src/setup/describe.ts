import type { SpoolParts } from "./capability.ts";
import type { SettingNames } from "../shared/checks.ts";
import { LIMITER_PERIOD_SECONDS } from "../request/client-limiter.ts";
import { reportPathOf } from "../request/path.ts";
import { tunnelUrlFor, type TunnelSettings } from "./settings.ts";

/**
 * What a tunnel serves and what it is bound to, in words an operator reads in the Worker's start
 * line: every path it answers (so that a change of route can be confirmed from the logs), and each
 * binding as bound or not, with what its absence means.
 */
export interface TunnelDescription {
  /** The URL pages are given (with the query when the route is `/monitoring`), or `null` without a DSN. */
  pages_post_to: string | null;
  routes_served: readonly string[];
  /** Each route's CSP report path, in the order of `routes_served`; none without `cspReports`. */
  csp_reports_served: readonly string[];
  sentry_sdk_paths_served: readonly string[];
  /** Where envelopes go: each DSN's own Sentry, or the one origin `upstreamOrigin` names instead. */
  upstream: string;
  rate_limiter: string;
  spool: string;
  large_bodies: string;
  /** Whether envelopes sent with `Content-Encoding: gzip` or `deflate` are read (`compressedBodies`). */
  compressed_bodies: string;
  forwarded_lines: string;
}

/** The tunnel's part of the start line, for `settings` and what it was given; each setting named as it was given. */
export function describeTunnel(
  settings: TunnelSettings,
  names: SettingNames,
  spool: SpoolParts["described"] | undefined,
  given: { csp: boolean; compressed: boolean },
): TunnelDescription {
  return {
    pages_post_to: tunnelUrlFor(settings) ?? null,
    routes_served: settings.routes,
    csp_reports_served: given.csp ? settings.routes.map(reportPathOf) : [],
    sentry_sdk_paths_served: settings.sentryPaths,
    upstream: settings.upstreamOrigin
      ? `elsewhere: ${names("upstreamOrigin")} sends every envelope to ${settings.upstreamOrigin}, not to Sentry; it is for development and tests`
      : "Sentry: each envelope to its DSN's own ingest",
    rate_limiter: settings.limiter
      ? `on: ${names("limiter")} holds each client to its share, Retry-After ${LIMITER_PERIOD_SECONDS} s; a call that fails refuses its request`
      : "off: said on purpose, so no client is held to a share",
    spool: spool?.spool ?? "off: no spool, so envelopes Sentry cannot take now are lost",
    large_bodies: spool?.large_bodies ?? "off: no spool",
    compressed_bodies: given.compressed ? "on: gzip and deflate" : "off: an envelope sent compressed is refused, 415 unsupported_encoding",
    forwarded_lines: !settings.logForwarded
      ? `off: an envelope Sentry took is counted in Analytics Engine, not logged; refusals, failures and the spool are (${names("logForwarded")} on logs it)`
      : settings.logForwardedAsked
        ? `on: every envelope Sentry took is logged too (${names("logForwarded")})`
        : `counted: ${names("analytics")} is not given, so the envelopes Sentry took are counted in a line per project, status and window of ${LIMITER_PERIOD_SECONDS} s (repeats)`,
  };
}
