import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/cloudflare";
import { captureException } from "@sentry/core";

import { handleTunnelRequest, tunnelBindings } from "../tunnel/tunnel.server";

/**
 * The tunnel as a Remix resource route. `worker/index.ts` answers `/monitoring` itself, ahead of
 * Remix; this route answers `/monitoring/`, with the same core and so the same behaviour.
 */
function tunnel({ request, context }: ActionFunctionArgs | LoaderFunctionArgs) {
  return handleTunnelRequest(request, context.config.tunnel, {
    ...tunnelBindings(context.env),
    reportError: (error) => captureException(error),
  });
}

export const action = tunnel;

/** Other methods reach the loader; the tunnel answers them with 405. */
export const loader = tunnel;
