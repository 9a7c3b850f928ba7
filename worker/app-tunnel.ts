import { createTunnel, optionsFromEnv, type TunnelEnv, type TunnelRuntime, type TunnelWorker } from "@edge-monitoring/tunnel";
import { compressedBodies } from "@edge-monitoring/tunnel/compressed";
import { cspReports } from "@edge-monitoring/tunnel/csp";
import { spoolFromEnv, type SpoolEnv } from "@edge-monitoring/tunnel/spool";

import { RELEASE } from "../app/release.generated";

/** What the app's tunnel reads of `env`: the variables and bindings the README names. */
export type AppTunnelEnv = TunnelEnv & SpoolEnv;

/**
 * The app's one tunnel, every capability given, from its variables and bindings: built when the
 * isolate starts (`worker/index.ts`), and by `npm start`'s and `npm run deploy`'s check of the
 * variables before it. No route may shadow `hostPaths`, the app's own pages and scripts.
 */
export function appTunnel(env: AppTunnelEnv, hostPaths: readonly string[], runtime: TunnelRuntime = {}): TunnelWorker {
  return createTunnel({ ...optionsFromEnv(env), hostPaths, release: RELEASE, spool: spoolFromEnv(env), cspReports: cspReports(), compressedBodies: compressedBodies() }, runtime);
}
