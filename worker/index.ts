import { env as startupEnv, waitUntil } from "cloudflare:workers";
import { createRequestHandler, type ServerBuild } from "@remix-run/cloudflare";
import * as build from "@remix-run/dev/server-build";
import { withSentry } from "@sentry/cloudflare";
import { instrumentBuild } from "@sentry/remix/cloudflare";

import { readConfig } from "../app/config.server";
import { workerSentryOptions } from "../app/monitoring/worker-options.server";
import { createClientLimiter } from "../app/tunnel/client-limiter.server";
import { createClientReports } from "../app/tunnel/client-reports.server";
import { SentryLimits } from "../app/tunnel/sentry-limits.server";
import { createDeadLetterConsumer, createSpoolConsumer, DEAD_LETTER_QUEUE } from "../app/tunnel/spool-consumer.server";
import type { SpooledEnvelope } from "../app/tunnel/spool.server";
import { SpoolStats } from "../app/tunnel/spool-stats.server";
import { isTunnelPathSpelling, SECURITY_REPORT_PATH } from "../app/tunnel/tunnel-path";
import { createTunnel, tunnelBindings } from "../app/tunnel/tunnel.server";
import { reportTunnelBug } from "./report-tunnel-bug";
import { withOwnTrace } from "./own-trace";

/**
 * Read when the isolate starts rather than per request: a wrong setting stops `wrangler dev` and
 * `wrangler deploy` with the variable's name, instead of turning into failed requests later.
 */
const config = readConfig(startupEnv);

/**
 * Sentry's rate limits as this isolate last heard them, the spool's counts, and what the edge
 * dropped (sent to Sentry as client reports): shared by the live tunnel and the spool.
 */
const limits = new SentryLimits();
const spoolStats = new SpoolStats();
const reports = createClientReports(config.tunnel, { background: waitUntil });
const bindings = tunnelBindings(startupEnv);

/** The one tunnel of this isolate: the entry below and the Remix route both answer with it. */
const tunnel = createTunnel(config.tunnel, {
  ...bindings,
  limits,
  spoolStats,
  reports,
  reportError: (error, request) => reportTunnelBug(workerSentryOptions(config), error, request),
});

/**
 * The tunnel's per-client limit, for what else a client can make the Worker report: the
 * self-test's errors and sampled traces the client claims. The same binding and key, so one count.
 */
const clientAllowed = createClientLimiter(startupEnv.TUNNEL_RATE_LIMITER, config.tunnel.rateLimitPeriodSeconds);
const clientMayReport = (request: Request) => clientAllowed(request.headers.get("cf-connecting-ip"));

const deliverSpooled = createSpoolConsumer(config.tunnel, {
  queue: startupEnv.TUNNEL_SPOOL as Queue<SpooledEnvelope>,
  bucket: startupEnv.TUNNEL_SPOOL_BUCKET,
  limits,
  reports,
  stats: spoolStats,
  analytics: startupEnv.TUNNEL_ANALYTICS,
});
const settleDeadLetters = createDeadLetterConsumer({ bucket: startupEnv.TUNNEL_SPOOL_BUCKET, reports, stats: spoolStats });

// Said once per isolate, so that an operator sees a missing spool before an outage does.
console.log(
  JSON.stringify({
    event: "tunnel_start",
    spool: bindings.spool ? "on" : "off: TUNNEL_SPOOL is not bound, so envelopes Sentry cannot take now are lost",
    large_bodies: startupEnv.TUNNEL_SPOOL_BUCKET ? "R2" : "off: TUNNEL_SPOOL_BUCKET is not bound, so only bodies that fit in a message are stored",
    self_test: config.selfTest
      ? "on: /sentry-example-page reports to Sentry on request, within the per-client limit (SENTRY_SELF_TEST=off turns it off)"
      : "off: /sentry-example-page answers 404 (SENTRY_SELF_TEST=on turns it on)",
  }),
);

const handleRemixRequest = createRequestHandler(instrumentBuild(build as unknown as ServerBuild), build.mode);

const app = withSentry(() => workerSentryOptions(config), {
  fetch(request, env, ctx) {
    return handleRemixRequest(request, {
      env,
      ctx,
      config,
      tunnel,
      spool: bindings.spool ? spoolStats : undefined,
      clientMayReport,
    });
  },
} satisfies ExportedHandler<Env>);

export default {
  async fetch(request, env, ctx) {
    // Envelopes skip Sentry's request instrumentation (a client per request, a span, a copy of
    // text bodies) and Remix's router: they are most of the traffic, and none of that serves
    // them. Every spelling of the path comes here, so none of them is ever traced.
    const { pathname } = new URL(request.url);
    if (isTunnelPathSpelling(pathname) || pathname === SECURITY_REPORT_PATH) return tunnel(request);
    return app.fetch!(await withOwnTrace(request, config.sentry, clientMayReport), env, ctx);
  },
  queue(batch) {
    return batch.queue === DEAD_LETTER_QUEUE ? settleDeadLetters(batch) : deliverSpooled(batch);
  },
} satisfies ExportedHandler<Env>;
