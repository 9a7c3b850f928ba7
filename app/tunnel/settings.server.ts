import type { TunnelLogLine } from "./log-line.server";
import type { OwnProject } from "./upstream/ingest.server";
import type { Dsn } from "./upstream/dsn.server";
import { createSpoolBudget, type SpoolBudget } from "./spool/budget.server";
import type { SpoolStats } from "./spool/stats.server";
import { createSpool, type Spool, type SpooledEnvelope } from "./spool/store.server";
import type { ClientReports } from "./upstream/client-reports.server";
import type { SentryLimits } from "./upstream/sentry-limits.server";

/** The tunnel's settings, as `app/config.server.ts` reads them from the Worker's variables. */
export interface TunnelSettings {
  /** DSNs whose envelopes are forwarded, each to its own ingest. */
  allowedDsns: readonly Dsn[];
  /** Partner origins allowed besides the request's own; they also get CORS. */
  allowedOrigins: readonly string[];
  maxEnvelopeBytes: number;
  /** From a request's arrival to the tunnel's answer, whatever the request or Sentry does. */
  timeoutMs: number;
  /** Development and tests only: replaces scheme, host and port of every upstream URL. */
  upstreamOrigin: string | undefined;
  /**
   * Where the app's pages post envelopes: a path with no query, or `TUNNEL_PATH`, the original
   * `/monitoring?o=&p=[&r=]`. Its CSP reports go to `reportPathOf(route)`.
   */
  route: string;
  /** Every route served, {@link route} and `TUNNEL_PATH` among them: each is the same tunnel. */
  routes: readonly string[];
  /** The rate limiter's period: how long a limited client is told to wait. */
  rateLimitPeriodSeconds: number;
  /** The spool's first retry delay; each further attempt waits twice as long, up to an hour. */
  spoolRetrySeconds: number;
  /**
   * The app's own project: `POST /monitoring/security-report` sends CSP reports there (without it,
   * that path is not served), and the spool counts there what it drops of DSNs no longer allowed.
   */
  ownProject: OwnProject | undefined;
}

/** What the tunnel uses besides its settings; every part is optional. */
export interface TunnelRuntime {
  /** Workers Rate Limiting, keyed by the client's address; a client it refused is refused without asking again until its window ends. */
  rateLimiter?: Pick<RateLimit, "limit">;
  /** Workers Analytics Engine: one data point per request. */
  analytics?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  log?: (line: TunnelLogLine) => void;
  /** A bug in the tunnel itself; the client gets a 500 either way. */
  reportError?: (error: unknown, request: Request) => void;
  /** Where envelopes go that Sentry cannot take now; without it they fail as Sentry did. */
  spool?: Spool;
  /** Sentry's rate limits as last heard; share one with the spool's consumer. */
  limits?: SentryLimits;
  /** Counts what is stored; share one with the spool's consumer. */
  spoolStats?: SpoolStats;
  /** Byte budgets for what a client, and everyone, may store; without it, only the request limit bounds the spool. */
  spoolBudget?: SpoolBudget;
  /** Counts, for Sentry, what the edge drops on its own account; share one with the spool's consumer. */
  reports?: ClientReports;
  /** Replaces the runtime's fetch towards Sentry: unit tests answer as Sentry would, without a socket. */
  fetch?: typeof fetch;
}

/** The bindings `wrangler.toml` declares for the tunnel; all but the limiter and the dataset are optional. */
export type TunnelEnv = Pick<Env, "TUNNEL_RATE_LIMITER" | "TUNNEL_ANALYTICS"> &
  Partial<Pick<Env, "TUNNEL_SPOOL" | "TUNNEL_SPOOL_BUCKET" | "TUNNEL_SPOOL_CLIENT_BUDGET" | "TUNNEL_SPOOL_TOTAL_BUDGET">>;

/** The runtime parts made from the Worker's bindings. */
export function tunnelBindings(env: TunnelEnv): TunnelRuntime {
  const queue = env.TUNNEL_SPOOL as Queue<SpooledEnvelope> | undefined;
  return {
    rateLimiter: env.TUNNEL_RATE_LIMITER,
    analytics: env.TUNNEL_ANALYTICS,
    spool: queue ? createSpool({ queue, bucket: env.TUNNEL_SPOOL_BUCKET }) : undefined,
    spoolBudget: createSpoolBudget(env.TUNNEL_SPOOL_CLIENT_BUDGET, env.TUNNEL_SPOOL_TOTAL_BUDGET),
  };
}
