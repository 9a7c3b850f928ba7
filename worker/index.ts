import { env as startupEnv } from "cloudflare:workers";
import { createRequestHandler, type ServerBuild } from "@remix-run/cloudflare";
import * as build from "@remix-run/dev/server-build";
import { withSentry } from "@sentry/cloudflare";
import { instrumentBuild } from "@sentry/remix/cloudflare";

import { readConfig } from "../app/config.server";
import { workerSentryOptions } from "../app/monitoring/worker-options.server";
import { SentryLimits } from "../app/tunnel/sentry-limits.server";
import { createSpoolConsumer } from "../app/tunnel/spool-consumer.server";
import { SpoolStats } from "../app/tunnel/spool-stats.server";
import { isTunnelPathSpelling } from "../app/tunnel/tunnel-path";
import { createTunnel, tunnelBindings } from "../app/tunnel/tunnel.server";
import { reportTunnelBug } from "./report-tunnel-bug";

/**
 * Read when the isolate starts rather than per request: a wrong setting stops `wrangler dev` and
 * `wrangler deploy` with the variable's name, instead of turning into failed requests later.
 */
const config = readConfig(startupEnv);

/** Sentry's rate limits as this isolate last heard them, and the spool's counts: shared by the live tunnel and the spool. */
const limits = new SentryLimits();
const spoolStats = new SpoolStats();
const bindings = tunnelBindings(startupEnv);

/** The one tunnel of this isolate: the entry below and the Remix route both answer with it. */
const tunnel = createTunnel(config.tunnel, {
  ...bindings,
  limits,
  spoolStats,
  reportError: (error, request) => reportTunnelBug(workerSentryOptions(config), error, request),
});

const deliverSpooled = createSpoolConsumer(config.tunnel, {
  bucket: startupEnv.TUNNEL_SPOOL_BUCKET,
  limits,
  stats: spoolStats,
  analytics: startupEnv.TUNNEL_ANALYTICS,
});

// Said once per isolate, so that an operator sees a missing spool before an outage does.
console.log(
  JSON.stringify({
    event: "tunnel_start",
    spool: bindings.spool ? "on" : "off: TUNNEL_SPOOL is not bound, so envelopes Sentry cannot take now are lost",
    large_bodies: startupEnv.TUNNEL_SPOOL_BUCKET ? "R2" : "off: TUNNEL_SPOOL_BUCKET is not bound, so only bodies that fit in a message are stored",
  }),
);

const handleRemixRequest = createRequestHandler(instrumentBuild(build as unknown as ServerBuild), build.mode);

const app = withSentry(() => workerSentryOptions(config), {
  fetch(request, env, ctx) {
    return handleRemixRequest(request, { env, ctx, config, tunnel, spool: bindings.spool ? spoolStats : undefined });
  },
} satisfies ExportedHandler<Env>);

export default {
  fetch(request, env, ctx) {
    // Envelopes skip Sentry's request instrumentation (a client per request, a span, a copy of
    // text bodies) and Remix's router: they are most of the traffic, and none of that serves
    // them. Every spelling of the path comes here, so none of them is ever traced.
    if (isTunnelPathSpelling(new URL(request.url).pathname)) return tunnel(request);
    return app.fetch!(request, env, ctx);
  },
  queue(batch) {
    return deliverSpooled(batch);
  },
} satisfies ExportedHandler<Env>;
