import { compressedBodies } from "../../src/compressed.ts";
import { cspReports } from "../../src/csp.ts";
import { optionsFromEnv, type TunnelEnv } from "../../src/setup/from-env.ts";
import type { TunnelRuntime } from "../../src/setup/options.ts";
import { settingNames } from "../../src/shared/checks.ts";
import { spoolFromEnv, type SpoolEnv } from "../../src/spool.ts";
import { createTunnel, type TunnelWorker } from "../../src/setup/worker.ts";
import { settingsOf, type TunnelSettings } from "../../src/setup/settings.ts";
import { EVERY_CLIENT } from "../../src/testing/harness.ts";

/** The Worker variables and bindings a tunnel built from `env` reads, as `wrangler.toml` would give them. */
export type TestEnv = TunnelEnv & SpoolEnv;

/**
 * For the package's tests of one stage: the settings a tunnel reads from `env`, with a limiter
 * that lets every client through unless `env` gives one or turns it off. Not shipped: the build
 * and the tarball leave it out.
 */
export function readTunnelSettings(env: TunnelEnv, facts: { hostPaths?: readonly string[]; release?: string } = {}): TunnelSettings {
  const limited = env.TUNNEL_RATE_LIMITING === undefined && env.TUNNEL_RATE_LIMITER === undefined;
  const options = optionsFromEnv(limited ? { ...env, TUNNEL_RATE_LIMITER: EVERY_CLIENT } : env);
  const given = { ...options, ...facts };
  return settingsOf(given, settingNames(given));
}

/**
 * The tunnel as a Worker that keeps its settings in `wrangler.toml` builds it, every capability
 * given: its variables and bindings read from `env`.
 */
export function tunnelFromEnv(env: TunnelEnv & SpoolEnv, runtime: TunnelRuntime = {}): TunnelWorker {
  return createTunnel({ ...optionsFromEnv(env), spool: spoolFromEnv(env), cspReports: cspReports(), compressedBodies: compressedBodies() }, runtime);
}

/** The tunnel's answer to a request it serves; throws for one it leaves to its host. */
export async function answerOf(tunnel: TunnelWorker, request: Request): Promise<Response> {
  const answer = await tunnel.handle(request);
  if (!answer) throw new Error(`the tunnel does not serve ${request.url}`);
  return answer;
}
