import { dsnFacts, variableReader, type TunnelEnv } from "@edge-monitoring/tunnel";

export { ConfigError } from "@edge-monitoring/tunnel";

/** The Worker's settings, read from `env` once and checked, so that a request never meets a bad one. */
export interface AppConfig {
  sentry: SentryConfig;
  /** Development and tests: where the tunnel and the Worker's SDK send instead of Sentry (`TUNNEL_UPSTREAM_ORIGIN`). */
  upstreamOrigin: string | undefined;
  /**
   * Whether `/sentry-example-page` and its loader page exist. They make the Worker report to Sentry
   * on request, so in production they are off unless the operator turns them on.
   */
  selfTest: boolean;
  /** Origins besides the app's own that pages may fetch from: the CSP's `connect-src`. */
  connectOrigins: readonly string[];
}

export interface SentryConfig {
  /** The app's own public DSN, as the SDKs are given it; `undefined` when monitoring is not configured. */
  dsn: string | undefined;
  /** Which project that DSN reports to: the browser's tunnel path names it. */
  project: NonNullable<ReturnType<typeof dsnFacts>>["project"] | undefined;
  /** That DSN's public key, which the Worker's trace headers name. */
  publicKey: string | undefined;
  environment: string;
  tracesSampleRate: number;
  /** Origins beyond the app's own that receive `sentry-trace` and `baggage`. */
  tracePropagationTargets: readonly string[];
  /** Development and tests: where the Worker's own SDK sends, instead of Sentry (`TUNNEL_UPSTREAM_ORIGIN`). */
  workerEnvelopeUrl: string | undefined;
}

/** The variables this module reads besides the tunnel's; the rest of `env` (bindings) is not its concern. */
export type ConfigEnv = Pick<TunnelEnv, "SENTRY_DSN" | "SENTRY_ENVIRONMENT" | "TUNNEL_UPSTREAM_ORIGIN"> &
  Partial<Pick<Env, "SENTRY_TRACES_SAMPLE_RATE" | "SENTRY_TRACE_PROPAGATION_TARGETS" | "SENTRY_SELF_TEST" | "CSP_CONNECT_ORIGINS">>;

/**
 * Throws a {@link ConfigError} naming the first variable that is wrong. The tunnel reads its own
 * variables when `worker/index.ts` builds it (`optionsFromEnv`), and refuses a DSN that is not one.
 */
export function readConfig(env: ConfigEnv): AppConfig {
  const read = variableReader<keyof ConfigEnv>(env);
  const upstreamOrigin = read.optionalOrigin("TUNNEL_UPSTREAM_ORIGIN");
  const dsn = read.text("SENTRY_DSN");
  const ownDsn = dsn === "" ? undefined : dsnFacts(dsn, upstreamOrigin);
  const environment = read.text("SENTRY_ENVIRONMENT") || "production";
  const tracePropagationTargets = read.origins("SENTRY_TRACE_PROPAGATION_TARGETS");
  return {
    selfTest: read.onOrOff("SENTRY_SELF_TEST", environment !== "production"),
    // The APIs the page traces are APIs it calls.
    connectOrigins: [...new Set([...tracePropagationTargets, ...read.origins("CSP_CONNECT_ORIGINS")])],
    sentry: {
      dsn: ownDsn && dsn,
      project: ownDsn?.project,
      publicKey: ownDsn?.publicKey,
      environment,
      tracesSampleRate: read.fraction("SENTRY_TRACES_SAMPLE_RATE", 1),
      tracePropagationTargets,
      workerEnvelopeUrl: upstreamOrigin ? ownDsn?.envelopeUrl : undefined,
    },
    upstreamOrigin,
  };
}
