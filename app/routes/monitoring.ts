import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/cloudflare";

import { handleTunnelRequest } from "../tunnel/tunnel.server";

/** The same-origin Sentry tunnel. All of its logic lives in `app/tunnel`; this only wires it in. */
export function action({ request, context }: ActionFunctionArgs) {
  return handleTunnelRequest(request, context.config.tunnel);
}

/** Other methods reach the loader; the tunnel answers them with 405. */
export function loader({ request, context }: LoaderFunctionArgs) {
  return handleTunnelRequest(request, context.config.tunnel);
}
