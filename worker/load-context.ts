import type { AppConfig } from "../app/config.server";
import type { TunnelWorker } from "@edge-monitoring/tunnel";

declare module "@remix-run/cloudflare" {
  interface AppLoadContext {
    env: Env;
    ctx: ExecutionContext;
    /** `env`, read and checked once at start-up. */
    config: AppConfig;
    /** The isolate's one tunnel, built from `env` when the isolate started. */
    tunnel: TunnelWorker;
    /** Whether the request's client may make the Worker report to Sentry once more: the tunnel's per-client limit. */
    clientMayReport: (request: Request) => Promise<boolean>;
  }
}
