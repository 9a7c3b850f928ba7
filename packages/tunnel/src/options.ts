import type { TunnelBindings, TunnelRuntime } from "./bindings.ts";
import { readTunnelSettings, type TunnelSettings, type TunnelVariables } from "./settings.ts";
import { ConfigError } from "./shared/variables.ts";
import type { SpoolQueue } from "./spool/store.ts";
import { createTunnelWorker, type TunnelWorker } from "./worker.ts";

/** A Workers Rate Limiting binding, or anything that answers as one. */
type Limiter = Pick<RateLimit, "limit">;

/**
 * The tunnel configured in code: each setting typed, each binding an object, under any name and
 * as many times as a Worker likes (two tunnels, a staging spool beside production's). Each
 * `@default` is the value when neither the option nor its Worker variable in `variables` is given;
 * a bad value throws a `ConfigError` naming the option.
 */
export interface TunnelOptions {
  /**
   * Worker variables to read first (`env` will do), as `readTunnelSettings` reads them: the options
   * below override each. For settings kept in `wrangler.toml`, `.dev.vars` and `--var`.
   */
  variables?: TunnelVariables;
  /**
   * Your own public DSN: always allowed, the default route is derived from it, and CSP reports and
   * the spool's client reports go to its project.
   * @default none
   */
  dsn?: string;
  /**
   * Further DSNs forwarded for; self-hosted ones too.
   * @default []
   */
  allowedDsns?: readonly string[];
  /**
   * Browser origins allowed besides the request's own; they also get CORS.
   * @default []
   */
  allowedOrigins?: readonly string[];
  /**
   * Where pages post, with no query.
   * @default a path derived from `dsn`, such as `/6b1xzn8op8`
   */
  route?: string;
  /**
   * Earlier routes still served, for pages loaded before a change of `route`.
   * @default []
   */
  retiredRoutes?: readonly string[];
  /**
   * Whether the paths Sentry's own SDK posts to with `tunnel: true` are served.
   * @default true
   */
  sentryPaths?: boolean;
  /**
   * The paths your app serves itself (`/shop/:item`, `/build/*`): no route may shadow one.
   * @default []
   */
  hostPaths?: readonly string[];
  /**
   * The environment CSP reports are filed under.
   * @default "production"
   */
  environment?: string;
  /**
   * The release CSP reports are filed under.
   * @default none
   */
  release?: string;
  /**
   * The largest envelope accepted, in bytes; a larger one is refused 413.
   * @default 20971520 (20 MiB)
   */
  maxEnvelopeBytes?: number;
  /**
   * The whole exchange, from a request's arrival to the answer, in milliseconds.
   * @default 30000
   */
  timeoutMs?: number;
  /**
   * The per-client limiter (a Workers Rate Limiting binding), or `"off"` to run without any limit on
   * purpose. Something without a `limit()` method is refused; a call that fails refuses its request.
   */
  limiter: Limiter | "off";
  /**
   * The limiter's period in seconds: the `Retry-After` of a limited envelope, and the window in
   * which a client's repeated refusals share one log line. Keep it equal to the binding's `period`.
   * @default 10
   */
  limiterPeriodSeconds?: number;
  /**
   * One data point per request and spool outcome.
   * @default none: no data points, and every envelope Sentry took is logged instead
   */
  analytics?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  /**
   * Whether an envelope Sentry took gets a log line too, besides its data point.
   * @default false
   */
  logForwarded?: boolean;
  /**
   * Where envelopes Sentry cannot take now are kept, and delivered from later.
   * @default none: what Sentry cannot take is answered with the failure
   */
  spool?: {
    /** The Queue the envelopes are stored in; this Worker consumes it (`queue()`). */
    queue: SpoolQueue;
    /**
     * Bodies too large for a queue message (128 KB, less the stored headers).
     * @default none: those are answered with the failure
     */
    bucket?: R2Bucket;
    /** What one client may store a minute, in units of 256 KiB; required unless `limiter` is `"off"`. */
    clientBudget?: Limiter;
    /** What everyone at this location may store a minute, in units of 256 KiB; required unless `limiter` is `"off"`. */
    totalBudget?: Limiter;
    /**
     * The queue's name, as `wrangler.toml` gives it: `queue()` takes its batches. Two tunnels in
     * one Worker each name their own.
     * @default "tunnel-spool"
     */
    queueName?: string;
    /**
     * The dead-letter queue's name, as `wrangler.toml` gives it.
     * @default "tunnel-spool-dead"
     */
    deadLetterQueueName?: string;
    /**
     * The consumer's `max_retries` in `wrangler.toml`, which must not be smaller.
     * @default 5
     */
    maxRetries?: number;
    /**
     * The first retry's delay in seconds; each further one twice as long, with jitter, up to an hour.
     * @default 10
     */
    retrySeconds?: number;
    /**
     * How long, in seconds, the oldest stored envelope may wait before `spoolHeartbeat()` says `stale`.
     * @default 3600
     */
    maxAgeSeconds?: number;
  };
  /**
   * Development and tests only: replaces scheme, host and port of every upstream URL; the start
   * line names it, and `npm run deploy` refuses it for production unless told it is on purpose.
   * @default none: each envelope goes to its DSN's own ingest
   */
  upstreamOrigin?: string;
}

const text = (value: string | number | boolean | readonly string[] | undefined, onOff = false): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value === "boolean") return onOff ? (value ? "on" : "off") : String(value);
  return typeof value === "object" ? value.join(",") : String(value);
};

/** Each Worker variable an option stands for: the option's name (what a refusal says), and its value as the variable's text. */
const AS_VARIABLES: [keyof TunnelVariables, string, (options: TunnelOptions) => string | undefined][] = [
  ["SENTRY_DSN", "dsn", (options) => options.dsn],
  ["SENTRY_ENVIRONMENT", "environment", (options) => options.environment],
  ["TUNNEL_ALLOWED_DSNS", "allowedDsns", (options) => text(options.allowedDsns)],
  ["TUNNEL_ALLOWED_ORIGINS", "allowedOrigins", (options) => text(options.allowedOrigins)],
  ["TUNNEL_ROUTE", "route", (options) => options.route],
  ["TUNNEL_RETIRED_ROUTES", "retiredRoutes", (options) => text(options.retiredRoutes)],
  ["TUNNEL_SENTRY_PATHS", "sentryPaths", (options) => text(options.sentryPaths, true)],
  ["TUNNEL_MAX_ENVELOPE_BYTES", "maxEnvelopeBytes", (options) => text(options.maxEnvelopeBytes)],
  ["TUNNEL_TIMEOUT_MS", "timeoutMs", (options) => text(options.timeoutMs)],
  ["TUNNEL_RATE_LIMIT_PERIOD_SECONDS", "limiterPeriodSeconds", (options) => text(options.limiterPeriodSeconds)],
  ["TUNNEL_RATE_LIMITING", "limiter", (options) => (options.limiter === "off" ? "off" : undefined)],
  ["TUNNEL_LOG_FORWARDED", "logForwarded", (options) => text(options.logForwarded, true)],
  ["TUNNEL_SPOOL_QUEUE_NAME", "spool.queueName", (options) => options.spool?.queueName],
  ["TUNNEL_DEAD_LETTER_QUEUE_NAME", "spool.deadLetterQueueName", (options) => options.spool?.deadLetterQueueName],
  ["TUNNEL_SPOOL_MAX_RETRIES", "spool.maxRetries", (options) => text(options.spool?.maxRetries)],
  ["TUNNEL_SPOOL_RETRY_SECONDS", "spool.retrySeconds", (options) => text(options.spool?.retrySeconds)],
  ["TUNNEL_SPOOL_MAX_AGE_SECONDS", "spool.maxAgeSeconds", (options) => text(options.spool?.maxAgeSeconds)],
  ["TUNNEL_UPSTREAM_ORIGIN", "upstreamOrigin", (options) => options.upstreamOrigin],
];

/** Each binding an option stands for, the same way. */
const AS_BINDINGS: [keyof TunnelBindings, string, (options: TunnelOptions) => unknown][] = [
  ["TUNNEL_RATE_LIMITER", "limiter", (options) => (options.limiter === "off" ? undefined : options.limiter)],
  ["TUNNEL_ANALYTICS", "analytics", (options) => options.analytics],
  ["TUNNEL_SPOOL", "spool.queue", (options) => options.spool?.queue],
  ["TUNNEL_SPOOL_BUCKET", "spool.bucket", (options) => options.spool?.bucket],
  ["TUNNEL_SPOOL_CLIENT_BUDGET", "spool.clientBudget", (options) => options.spool?.clientBudget],
  ["TUNNEL_SPOOL_TOTAL_BUDGET", "spool.totalBudget", (options) => options.spool?.totalBudget],
];

const OPTION_OF = new Map([...AS_VARIABLES, ...AS_BINDINGS].map(([name, option]) => [name as string, option]));

/** The entries of `table` whose option is given, as the variables or bindings the reader takes. */
function given<Name extends string, Value>(table: readonly [Name, string, (options: TunnelOptions) => Value | undefined][], options: TunnelOptions) {
  return Object.fromEntries(table.map(([name, , value]) => [name, value(options)]).filter(([, value]) => value !== undefined));
}

/**
 * The queues this isolate's tunnels consume, each by the routes of the tunnel that claimed it:
 * `queue()` hands a batch to the tunnel whose queue name it bears, so two tunnels under one name
 * would take each other's envelopes, or leave them to the host.
 */
const claimedQueues = new Map<string, string>();

/** Throws when another tunnel of this isolate (other routes) consumes a queue of the same name. */
function claimQueues(settings: TunnelSettings): void {
  const claimant = settings.routes.join(" ");
  for (const [name, variable] of [
    [settings.spoolQueue, "TUNNEL_SPOOL_QUEUE_NAME"],
    [settings.deadLetterQueue, "TUNNEL_DEAD_LETTER_QUEUE_NAME"],
  ] as const) {
    const other = claimedQueues.get(name);
    if (other !== undefined && other !== claimant) {
      throw new ConfigError(variable, `is "${name}", which another tunnel in this Worker (${other}) consumes: give each tunnel's spool a queue of its own, and its name here`);
    }
  }
  claimedQueues.set(settings.spoolQueue, claimant).set(settings.deadLetterQueue, claimant);
}

/**
 * Builds the tunnel and its spool once, from typed options: call it once per isolate, once per
 * tunnel. The same tunnel as `createTunnelWorker(readTunnelSettings(env), env)` builds from a
 * Worker's variables and its bindings of fixed names. Tunnels with a spool must each name queues
 * of their own.
 */
export function createTunnel(options: TunnelOptions, runtime: TunnelRuntime = {}): TunnelWorker {
  const variables = { ...options.variables, ...given(AS_VARIABLES, options) } as TunnelVariables;
  const bindings = given(AS_BINDINGS, options) as TunnelBindings;
  try {
    const settings = readTunnelSettings(variables, { hostPaths: options.hostPaths ?? [], ...(options.release === undefined ? {} : { release: options.release }) });
    const tunnel = createTunnelWorker(settings, bindings, runtime);
    if (options.spool) claimQueues(settings);
    return tunnel;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const option = OPTION_OF.get(error.variable) ?? error.variable;
    throw new ConfigError(option, error.message.slice(error.variable.length + 1));
  }
}
