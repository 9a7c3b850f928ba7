import { isTunnelPathSpelling, tunnelPaths } from "./request/path";
import { tunnelBindings, type TunnelEnv, type TunnelSettings } from "./settings.server";
import { createSpoolConsumer } from "./spool/consumer.server";
import { createDeadLetterConsumer, DEAD_LETTER_QUEUE } from "./spool/dead-letters.server";
import { SpoolStats } from "./spool/stats.server";
import type { SpooledEnvelope } from "./spool/store.server";
import { createTunnel, type Tunnel } from "./tunnel.server";
import { createClientReports, type ClientReports } from "./upstream/client-reports.server";
import { SentryLimits } from "./upstream/sentry-limits.server";

export interface TunnelWorkerOptions {
  /** Keeps the isolate alive for work after the answer (`waitUntil` from `cloudflare:workers`): client reports. */
  background?: (work: Promise<unknown>) => void;
  /** A bug in the tunnel itself; the client gets a 500 either way. */
  reportError?: (error: unknown, request: Request) => void;
}

/** Everything a Worker needs to run the tunnel: its `fetch` for the tunnel's paths, and its `queue()`. */
export interface TunnelWorker {
  /** Whether a path is the tunnel's: every spelling of each route and of its CSP report path (the tunnel answers all but the exact ones 404). */
  serves(pathname: string): boolean;
  fetch: Tunnel;
  /** The Worker's `queue()` handler, for the spool and its dead-letter queue. */
  queue(batch: MessageBatch<unknown>): Promise<void>;
  /** What this isolate stored and delivered; `undefined` without the spool. */
  spoolStats: SpoolStats | undefined;
  /** The isolate's client reports, for what else the Worker drops on a client's account. */
  reports: ClientReports;
}

/**
 * Builds the tunnel and its spool once per isolate, sharing between them what one isolate knows:
 * Sentry's rate limits, the spool's counts and the client reports. The app's Worker entry uses it,
 * and so can any other Worker (`docs/adopting.md`).
 */
export function createTunnelWorker(settings: TunnelSettings, env: TunnelEnv, options: TunnelWorkerOptions = {}): TunnelWorker {
  const limits = new SentryLimits();
  const stats = new SpoolStats();
  const reports = createClientReports(settings, { background: options.background });
  const bindings = tunnelBindings(env);
  const tunnel = createTunnel(settings, { ...bindings, limits, spoolStats: stats, reports, reportError: options.reportError });
  const queue = env.TUNNEL_SPOOL as Queue<SpooledEnvelope> | undefined;
  const deliver = queue && createSpoolConsumer(settings, { queue, bucket: env.TUNNEL_SPOOL_BUCKET, limits, reports, stats, analytics: env.TUNNEL_ANALYTICS });
  const settleDeadLetters = createDeadLetterConsumer({ bucket: env.TUNNEL_SPOOL_BUCKET, reports, stats });
  const paths = tunnelPaths(settings.routes);
  return {
    serves: (pathname) => isTunnelPathSpelling(pathname, paths),
    fetch: tunnel,
    async queue(batch) {
      if (batch.queue === DEAD_LETTER_QUEUE) return settleDeadLetters(batch);
      // Without a producer there is nothing this Worker could have stored: let the queue retry.
      if (!deliver) return batch.retryAll();
      return deliver(batch);
    },
    spoolStats: bindings.spool ? stats : undefined,
    reports,
  };
}
