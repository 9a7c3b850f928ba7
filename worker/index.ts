import { env as startupEnv } from "cloudflare:workers";
import { createRequestHandler, type ServerBuild } from "@remix-run/cloudflare";
import * as build from "@remix-run/dev/server-build";

import { readConfig } from "../app/config.server";

/**
 * Read when the isolate starts rather than per request: a wrong setting stops `wrangler dev` and
 * `wrangler deploy` with the variable's name, instead of turning into failed requests later.
 */
const config = readConfig(startupEnv);

const handleRemixRequest = createRequestHandler(build as unknown as ServerBuild, build.mode);

export default {
  fetch(request, env, ctx) {
    return handleRemixRequest(request, { env, ctx, config });
  },
} satisfies ExportedHandler<Env>;
