import type { TunnelBindings } from "./bindings.ts";
import { reportPathOf } from "./request/path.ts";
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
  csp_reports_served: readonly string[];
  sentry_sdk_paths_served: readonly string[];
  /** Where envelopes go: each DSN's own Sentry, or the one origin `TUNNEL_UPSTREAM_ORIGIN` names instead. */
  upstream: string;
  rate_limiter: string;
  spool: string;
  large_bodies: string;
  forwarded_lines: string;
}

/** The tunnel's part of the start line, for `settings` and what `bindings` holds. */
export function describeTunnel(settings: TunnelSettings, bindings: TunnelBindings, logsForwarded: boolean): TunnelDescription {
  return {
    pages_post_to: tunnelUrlFor(settings) ?? null,
    routes_served: settings.routes,
    csp_reports_served: settings.ownProject ? settings.routes.map(reportPathOf) : [],
    sentry_sdk_paths_served: settings.sentryPaths,
    upstream: settings.upstreamOrigin
      ? `elsewhere: TUNNEL_UPSTREAM_ORIGIN sends every envelope to ${settings.upstreamOrigin}, not to Sentry; it is for development and tests`
      : "Sentry: each envelope to its DSN's own ingest",
    rate_limiter: settings.rateLimiting
      ? `on: TUNNEL_RATE_LIMITER holds each client to its share, Retry-After ${settings.rateLimitPeriodSeconds} s; a call that fails refuses its request`
      : "off: TUNNEL_RATE_LIMITING=off, so no client is held to a share",
    spool: bindings.TUNNEL_SPOOL
      ? `on: TUNNEL_SPOOL, queue ${settings.spoolQueue} and dead letters ${settings.deadLetterQueue}` +
        (settings.rateLimiting ? ", bytes held to TUNNEL_SPOOL_CLIENT_BUDGET and TUNNEL_SPOOL_TOTAL_BUDGET" : "") +
        "; its depth is in each tunnel_spool_batch and tunnel_spool_heartbeat line"
      : "off: TUNNEL_SPOOL is not bound, so envelopes Sentry cannot take now are lost",
    large_bodies: bindings.TUNNEL_SPOOL_BUCKET ? "R2: TUNNEL_SPOOL_BUCKET" : "off: TUNNEL_SPOOL_BUCKET is not bound, so only bodies that fit in a message are stored",
    forwarded_lines: !logsForwarded
      ? "off: an envelope Sentry took is counted in Analytics Engine, not logged; refusals, failures and the spool are (TUNNEL_LOG_FORWARDED=on logs it)"
      : settings.logForwarded
        ? "on: every envelope Sentry took is logged too (TUNNEL_LOG_FORWARDED)"
        : "on: TUNNEL_ANALYTICS is not bound, so every envelope Sentry took is logged instead of counted",
  };
}
