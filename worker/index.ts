import { env as startupEnv, waitUntil } from "cloudflare:workers";
import { createRequestHandler, type ServerBuild } from "@remix-run/cloudflare";
import * as build from "@remix-run/dev/server-build";
import { withSentry } from "@sentry/cloudflare";
import { instrumentBuild } from "@sentry/remix/cloudflare";

import { readConfig } from "../app/config.server";
import { PLACEHOLDER_DSN } from "../app/monitoring/local-defaults";
import { appTunnel } from "./app-tunnel";
import { crossSiteRefusal } from "./cross-site";
import { withOwnTrace } from "./own-trace";
import { appPathsOf } from "./page-paths";
import { workerReporting } from "./reporting";
import { reportTunnelBug } from "./report-tunnel-bug";
import { checkInSpool } from "./spool-heartbeat";

/**
 * Read when the isolate starts rather than per request: a wrong setting stops `wrangler dev` and
 * `npm run deploy` with the variable's name, instead of turning into failed requests later.
 */
const config = readConfig(startupEnv);

/** The one tunnel of this isolate, and its spool: the entry below and the Remix route both answer with it. */
const tunnel = appTunnel(startupEnv, appPathsOf(build as unknown as ServerBuild), {
  background: waitUntil,
  reportError: (error, request) => reportTunnelBug(reporting.options(), error, request),
});

/**
 * The Worker's own SDK, every report held to its client's share (decision 017): the tunnel's own
 * per-client limiter, which also answers the self-test's presses, so one count.
 */
const reporting = workerReporting(config, tunnel.clientShare);
const { clientMayReport } = reporting;

// Said once per isolate, so that an operator sees a missing spool before an outage does, and can
// confirm from the logs what the pages post to and what else is still served.
console.log(
  JSON.stringify({
    event: "tunnel_start",
    monitoring: !config.sentry.dsn
      ? "off: SENTRY_DSN is empty, so neither the pages nor the Worker report anything"
      : config.sentry.dsn === PLACEHOLDER_DSN
        ? "local: SENTRY_DSN is npm start's placeholder, which no Sentry project receives"
        : config.upstreamOrigin
          ? `elsewhere: project ${config.sentry.project!.project}, environment ${config.sentry.environment}, but every envelope and the Worker's own events go to ${config.upstreamOrigin} (TUNNEL_UPSTREAM_ORIGIN), not to Sentry`
          : `on: project ${config.sentry.project!.project}, environment ${config.sentry.environment}`,
    ...tunnel.describe(),
    self_test: config.selfTest
      ? "on: /sentry-example-page reports to Sentry on request, within the per-client limit (SENTRY_SELF_TEST=off turns it off)"
      : "off: /sentry-example-page answers 404 (SENTRY_SELF_TEST=on turns it on)",
  }),
);

const handleRemixRequest = createRequestHandler(instrumentBuild(build as unknown as ServerBuild), build.mode);

const app = withSentry(reporting.options, {
  fetch(request, env, ctx) {
    return handleRemixRequest(request, {
      env,
      ctx,
      config,
      tunnel,
      clientMayReport,
    });
  },
  // Sentry's wrapper reads the environment and the context, which the heartbeat itself does not.
  scheduled(controller: ScheduledController, _env: Env, _ctx: ExecutionContext) {
    return checkInSpool(tunnel, controller.cron);
  },
} satisfies ExportedHandler<Env>);

export default {
  async fetch(request, env, ctx) {
    // Envelopes skip Sentry's request instrumentation (a client per request, a span, a copy of
    // text bodies) and Remix's router: they are most of the traffic, and none of that serves
    // them. Every spelling of every route comes here, so none of them is ever traced.
    const answer = await tunnel.handle(request);
    if (answer) return answer;
    // Another site's request to change something is answered before anything can report it.
    const refusal = crossSiteRefusal(request);
    if (refusal) return refusal;
    return app.fetch!(withOwnTrace(request, config.sentry), env, ctx);
  },
  queue(batch) {
    // The tunnel's two queues are all this Worker consumes; the tunnel throws any other batch back.
    return tunnel.queue(batch);
  },
  scheduled(controller, env, ctx) {
    // The spool's heartbeat ([triggers] in wrangler.toml), under the SDK so that its check-ins are sent.
    return app.scheduled!(controller, env, ctx);
  },
} satisfies ExportedHandler<Env>;
