import { env as startupEnv } from "cloudflare:workers";
import { createRequestHandler, type ServerBuild } from "@remix-run/cloudflare";
import * as build from "@remix-run/dev/server-build";
import { withSentry } from "@sentry/cloudflare";
import { instrumentBuild } from "@sentry/remix/cloudflare";

import { readConfig } from "../app/config.server";
import { workerSentryOptions } from "../app/monitoring/worker-options.server";
import { TUNNEL_PATH } from "../app/tunnel/tunnel-path";
import { handleTunnelRequest, tunnelBindings } from "../app/tunnel/tunnel.server";
import { reportTunnelBug } from "./report-tunnel-bug";

/**
 * Read when the isolate starts rather than per request: a wrong setting stops `wrangler dev` and
 * `wrangler deploy` with the variable's name, instead of turning into failed requests later.
 */
const config = readConfig(startupEnv);

const handleRemixRequest = createRequestHandler(instrumentBuild(build as unknown as ServerBuild), build.mode);

const app = withSentry(() => workerSentryOptions(config), {
  fetch(request, env, ctx) {
    return handleRemixRequest(request, { env, ctx, config });
  },
} satisfies ExportedHandler<Env>);

export default {
  fetch(request, env, ctx) {
    // Envelopes skip Sentry's request instrumentation (a client per request, a span, a copy of
    // text bodies) and Remix's router: they are most of the traffic, and none of that serves
    // them. `/monitoring/` still reaches the same tunnel through the Remix route.
    if (new URL(request.url).pathname === TUNNEL_PATH) {
      return handleTunnelRequest(request, config.tunnel, {
        ...tunnelBindings(env),
        reportError: (error) => ctx.waitUntil(reportTunnelBug(workerSentryOptions(config), error, request, ctx)),
      });
    }
    return app.fetch!(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
