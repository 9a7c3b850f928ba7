import type { TunnelCapability } from "./capability.ts";
import type { LogLine } from "../stages/log-line.ts";
import type { CoreOptions } from "./core-options.ts";

/**
 * The tunnel's options: each setting typed, each binding an object under any name, so that a
 * Worker can run two tunnels. What a Worker does not pass, its bundle does not carry: the spool,
 * CSP reports and compressed bodies are imports of their own (`@edge-monitoring/tunnel/spool`,
 * `/csp`, `/compressed`). A bad value throws a `ConfigError` naming the option (or, through
 * `optionsFromEnv`, the variable).
 */
export interface TunnelOptions extends CoreOptions {
  /**
   * Where envelopes Sentry cannot take now are kept and delivered from later, for up to 24 hours:
   * `spool({ … })` of `@edge-monitoring/tunnel/spool`. A body over 64 KiB is kept in hand while it
   * streams to Sentry, within `inHandBytes` per isolate, so that it is stored if Sentry fails under
   * it; past that it is lost with an error (503 `not_kept_in_hand`), counted in Sentry's client reports.
   * @default none: what Sentry cannot take is answered with the failure
   */
  spool?: TunnelCapability<"spool"> | undefined;
  /**
   * CSP reports at each route's report path (`<route>/csp`), sent to `dsn`'s project: `cspReports()`
   * of `@edge-monitoring/tunnel/csp`.
   * @default none: the report paths are not served
   */
  cspReports?: TunnelCapability<"csp"> | undefined;
  /**
   * Envelopes sent with `Content-Encoding: gzip` or `deflate` (Sentry's server SDKs; browsers send
   * none): `compressedBodies()` of `@edge-monitoring/tunnel/compressed`.
   * @default none: a compressed envelope is refused, 415 `unsupported_encoding`
   */
  compressedBodies?: TunnelCapability<"compressed"> | undefined;
}

/** What the tunnel takes from the runtime; each has the runtime's own as default. */
export interface TunnelRuntime {
  /**
   * Keeps the isolate alive for work after the answer (`waitUntil` of `cloudflare:workers`): the
   * client reports of what the tunnel dropped.
   * @default none: client reports are sent while the request is answered
   */
  background?: ((work: Promise<unknown>) => void) | undefined;
  /** A bug in the tunnel itself; the client gets a 500 either way. @default none */
  reportError?: (error: unknown, request: Request) => void;
  /** The tunnel's and the spool's log lines. @default one JSON line each with `console.log` */
  log?: (line: LogLine) => void;
  /** The clock: Sentry's limits, the breakers, the limiters' windows, the spool's ages and client reports. @default Date.now */
  now?: () => number;
  /** The spool's retry jitter. @default Math.random */
  random?: () => number;
  /** Every request towards Sentry: tests and simulations answer as Sentry would, without a socket. @default the runtime's own `fetch` */
  fetch?: typeof fetch | undefined;
}
