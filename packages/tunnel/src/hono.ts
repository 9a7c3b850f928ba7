/**
 * `@edge-monitoring/tunnel/hono`: the tunnel as Hono middleware. It answers every request the
 * tunnel serves, before any route of the app, and hands the rest on.
 */
import type { MiddlewareHandler } from "hono";

import type { TunnelWorker } from "./setup/worker.ts";

/**
 * Middleware that answers what `tunnel` serves (`tunnel.handle`) and calls `next()` for everything
 * else: `app.use(tunnelMiddleware(tunnel))` before the app's routes.
 */
export function tunnelMiddleware(tunnel: Pick<TunnelWorker, "handle">): MiddlewareHandler {
  return async (context, next) => {
    const answer = await tunnel.handle(context.req.raw);
    if (answer) return answer;
    await next();
    return undefined;
  };
}
