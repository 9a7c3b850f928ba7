import { RELEASE } from "./release.generated";
import { projectOf, readTunnelSettings, upstreamUrlFor, variableReader, type ProjectIdentity, type TunnelSettings, type TunnelVariables } from "@edge-monitoring/tunnel";
import { readWatchSettings, type WatchSettings, type WatchVariables } from "@edge-monitoring/tunnel/watch";

export { ConfigError } from "@edge-monitoring/tunnel";

/** The Worker's settings, read from `env` once and checked, so that a request never meets a bad one. */
export interface AppConfig {
  sentry: SentryConfig;
  tunnel: TunnelSettings;
  /** The ad-block list watch of the Worker's Cron Trigger; `undefined` while `TUNNEL_WATCH` is off. */
  watch: WatchSettings | undefined;
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
  project: ProjectIdentity | undefined;
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
export type ConfigEnv = TunnelVariables &
  WatchVariables &
  Partial<Pick<Env, "SENTRY_TRACES_SAMPLE_RATE" | "SENTRY_TRACE_PROPAGATION_TARGETS" | "SENTRY_SELF_TEST" | "CSP_CONNECT_ORIGINS">>;

/**
 * Throws a {@link ConfigError} naming the first variable that is wrong. `appPaths` are the paths
 * the app serves itself, its pages and its scripts, which no tunnel route may shadow.
 */
export function readConfig(env: ConfigEnv, appPaths: readonly string[] = []): AppConfig {
  // The tunnel reads its own variables, SENTRY_DSN and SENTRY_ENVIRONMENT among them.
  const tunnel = readTunnelSettings(env, { hostPaths: appPaths, release: RELEASE });
  const read = variableReader<keyof ConfigEnv>(env);
  const ownDsn = tunnel.ownProject?.dsn;
  const environment = read.text("SENTRY_ENVIRONMENT") || "production";
  const tracePropagationTargets = read.origins("SENTRY_TRACE_PROPAGATION_TARGETS");
  return {
    selfTest: read.onOrOff("SENTRY_SELF_TEST", environment !== "production"),
    // The APIs the page traces are APIs it calls.
    connectOrigins: [...new Set([...tracePropagationTargets, ...read.origins("CSP_CONNECT_ORIGINS")])],
    sentry: {
      dsn: ownDsn?.text,
      project: ownDsn && projectOf(ownDsn),
      publicKey: ownDsn?.publicKey,
      environment,
      tracesSampleRate: read.fraction("SENTRY_TRACES_SAMPLE_RATE", 1),
      tracePropagationTargets,
      workerEnvelopeUrl: ownDsn && tunnel.upstreamOrigin ? upstreamUrlFor(ownDsn, tunnel.upstreamOrigin) : undefined,
    },
    tunnel,
    watch: readWatchSettings(env),
  };
}
