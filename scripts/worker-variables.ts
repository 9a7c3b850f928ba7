// The Worker's variables as a local run gives them, read by the app's own code before wrangler
// starts: a bad one is said in one plain line that names it, instead of inside wrangler's account
// of a runtime that failed to start (a minified stack, "likely a problem with the workerd binary").

import { build } from "esbuild";

import type { AppConfig, readConfig } from "../app/config.server";
import type { appPathsOf } from "../worker/page-paths";
import type { appTunnel, AppTunnelEnv } from "../worker/app-tunnel";
import { boundNames, type DeclaredWorker } from "./wrangler-config.ts";

/**
 * What `wrangler dev` gives the Worker: `declared`'s `[vars]` as wrangler reads them (an unquoted
 * number stays a number), then the developer's own (`localVariables`: `.dev.vars`, or `.env` and
 * `.env.local`), then the local defaults for what neither set.
 */
export function localWorkerVariables(
  declared: DeclaredWorker,
  developer: Record<string, string>,
  defaults: readonly (readonly [string, string])[],
): Record<string, unknown> {
  return { ...declared.bindings, ...developer, ...Object.fromEntries(defaults) };
}

/** Stand-ins for the bindings `wrangler.toml` declares: the tunnel checks which are there, and uses none while it is built. */
function standInBindings(names: ReadonlySet<string>): AppTunnelEnv {
  const limiter = { limit: async () => ({ success: true }) };
  const present = <T>(name: string, binding: T) => (names.has(name) ? { [name]: binding } : {});
  return {
    ...present("TUNNEL_RATE_LIMITER", limiter),
    ...present("TUNNEL_SPOOL_CLIENT_BUDGET", limiter),
    ...present("TUNNEL_SPOOL_TOTAL_BUDGET", limiter),
    ...present("TUNNEL_SPOOL", { send: async () => {} }),
    ...present("TUNNEL_SPOOL_BUCKET", { put: async () => null, get: async () => null, delete: async () => {} }),
    ...present("TUNNEL_ANALYTICS", { writeDataPoint: () => {} }),
  };
}

/**
 * The Worker's configuration as it would read `vars` when it starts, or its refusal in its own
 * words (`TUNNEL_ROUTE would …`, `TUNNEL_RATE_LIMITER is not bound …`): the one check before
 * `npm start` and `npm run deploy`. The app's `readConfig` and `appPathsOf` and the app's
 * `appTunnel` are bundled for Node (they are written for the Worker's bundler), the app's paths
 * come from Remix's config, as the build's do, and the bindings from `worker` (`wrangler.toml`'s,
 * or a deploy's `--config` and `--env`): nothing needs to be built first.
 */
export async function checkWorkerVariables(
  vars: Record<string, unknown>,
  worker: DeclaredWorker,
  dir = ".",
): Promise<{ config: AppConfig } | { problem: string }> {
  const [app, declared] = await Promise.all([appConfigReader(dir), declaredApp(dir)]);
  try {
    const config = app.readConfig(vars);
    app.appTunnel({ ...vars, ...standInBindings(boundNames(worker)) }, app.appPathsOf(declared));
    return { config };
  } catch (error) {
    if (error instanceof Error && error.name === "ConfigError") return { problem: error.message };
    throw error;
  }
}

interface AppConfigReader {
  readConfig: typeof readConfig;
  appPathsOf: typeof appPathsOf;
  appTunnel: typeof appTunnel;
}

async function appConfigReader(dir: string): Promise<AppConfigReader> {
  const bundled = await build({
    stdin: {
      contents:
        'export { readConfig } from "./app/config.server.ts";\nexport { appPathsOf } from "./worker/page-paths.ts";\nexport { appTunnel } from "./worker/app-tunnel.ts";\n',
      resolveDir: dir,
      loader: "ts",
    },
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    logLevel: "silent",
    // The release names what was built; nothing about the variables depends on it, and a check
    // that needed it would have to run after the build.
    plugins: [
      {
        name: "no-release",
        setup(bundler) {
          bundler.onResolve({ filter: /\/release\.generated$/ }, () => ({ path: "release", namespace: "no-release" }));
          bundler.onLoad({ filter: /.*/, namespace: "no-release" }, () => ({ contents: 'export const RELEASE = "unbuilt";', loader: "js" }));
        },
      },
    ],
  });
  return (await import(`data:text/javascript;base64,${Buffer.from(bundled.outputFiles[0]!.text).toString("base64")}`)) as AppConfigReader;
}

async function declaredApp(dir: string): Promise<Parameters<typeof appPathsOf>[0]> {
  const { readConfig: readRemixConfig } = await import("@remix-run/dev/dist/config.js");
  const { routes, publicPath } = await readRemixConfig(dir);
  return { routes, publicPath };
}
