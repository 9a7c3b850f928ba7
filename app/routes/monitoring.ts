import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/cloudflare";

/**
 * The tunnel's declared home among the routes. `worker/index.ts` answers every spelling of this
 * path before Remix sees it; should a request get here all the same, it meets the same tunnel.
 */
async function tunnel({ request, context }: ActionFunctionArgs | LoaderFunctionArgs) {
  // `/monitoring` is always the tunnel's: it answers every request here.
  return (await context.tunnel.handle(request))!;
}

export const action = tunnel;

/** Other methods reach the loader; the tunnel answers them with 405. */
export const loader = tunnel;
