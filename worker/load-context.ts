import type { AppConfig } from "../app/config.server";

declare module "@remix-run/cloudflare" {
  interface AppLoadContext {
    env: Env;
    ctx: ExecutionContext;
    /** `env`, read and checked once at start-up. */
    config: AppConfig;
  }
}
