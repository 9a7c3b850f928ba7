import type { Limiter } from "../shared/checks.ts";

/** The tunnel's own options, which every tunnel has; `TunnelOptions` adds the capabilities. */
export interface CoreOptions {
  /**
   * The per-client limiter (a Workers Rate Limiting binding), or `"off"` to run without any limit on
   * purpose. Required: without it any client could spend the project's quota. Something without a
   * `limit()` method is refused; a call that fails refuses its request.
   */
  limiter: Limiter | "off";
  /**
   * Your own public DSN: always allowed, the default route is derived from it, and CSP reports and
   * the spool's client reports go to its project. Empty text is none.
   * @default none
   */
  dsn?: string | undefined;
  /** Further DSNs forwarded for; self-hosted ones too. @default [] */
  allowedDsns?: readonly string[] | undefined;
  /** Browser origins allowed besides the request's own (`https://shop.example.com`); they also get CORS. @default [] */
  allowedOrigins?: readonly string[] | undefined;
  /**
   * Where pages post, with no query: one to four segments of lowercase letters, digits, `-` and `_`.
   * @default a path derived from `dsn`, such as `/6b1xzn8op8`
   */
  route?: string | undefined;
  /** Earlier routes still served, for pages loaded before a change of `route`. @default [] */
  retiredRoutes?: readonly string[] | undefined;
  /** Whether the paths Sentry's own SDK (11.12 and later) posts to with `tunnel: true` are served. @default true */
  sentryPaths?: boolean | undefined;
  /** The paths your app serves itself (`/shop/:item`, `/build/*`): no route may shadow one. @default [] */
  hostPaths?: readonly string[] | undefined;
  /** The environment CSP reports are filed under. @default "production" */
  environment?: string | undefined;
  /** The release CSP reports are filed under. @default none */
  release?: string | undefined;
  /** The largest envelope accepted, in bytes; a larger one is refused 413. @default 20971520 (20 MiB) */
  maxEnvelopeBytes?: number | undefined;
  /** The whole exchange, from a request's arrival to the answer, in milliseconds. @default 30000 (30 s) */
  timeoutMs?: number | undefined;
  /**
   * Workers Analytics Engine: one data point per request and spool outcome.
   * @default none: no data points, and every envelope Sentry took is logged instead
   */
  analytics?: Pick<AnalyticsEngineDataset, "writeDataPoint"> | undefined;
  /** Whether an envelope Sentry took gets a log line too, besides its data point. @default false */
  logForwarded?: boolean | undefined;
  /**
   * Development and tests only: replaces scheme, host and port of every upstream URL; the start
   * line names it.
   * @default none: each envelope goes to its DSN's own ingest
   */
  upstreamOrigin?: string | undefined;
}
