// The Worker's variables as a local run gives them, read by the app's own code before wrangler
// starts: a bad one is said in one plain line that names it, instead of inside wrangler's account
// of a runtime that failed to start (a minified stack, "likely a problem with the workerd binary").
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { build } from "esbuild";
import { parse } from "smol-toml";

import type { AppConfig, readConfig } from "../app/config.server";
import type { appPathsOf } from "../worker/page-paths";

/**
 * What `wrangler dev` gives the Worker: `wrangler.toml`'s `[vars]`, then the developer's own
 * (`localVariables`: `.dev.vars`, or `.env` and `.env.local`), then the local defaults for what
 * neither set.
 */
export function localWorkerVariables(
  developer: Record<string, string>,
  defaults: readonly (readonly [string, string])[],
  dir = ".",
): Record<string, string> {
  const declared = (parse(readFileSync(join(dir, "wrangler.toml"), "utf8")).vars ?? {}) as Record<string, string>;
  return { ...declared, ...developer, ...Object.fromEntries(defaults) };
}

/**
 * The Worker's configuration as it would read `vars` when it starts, or its refusal in its own
 * words (`TUNNEL_ROUTE would …`). The app's `readConfig` and `appPathsOf` are bundled for Node
 * (they are written for the Worker's bundler), and the app's paths come from Remix's config, as the
 * build's do: nothing needs to be built first.
 */
export async function checkWorkerVariables(vars: Record<string, string>, dir = "."): Promise<{ config: AppConfig } | { problem: string }> {
  const [app, declared] = await Promise.all([appConfigReader(dir), declaredApp(dir)]);
  try {
    return { config: app.readConfig(vars, app.appPathsOf(declared)) };
  } catch (error) {
    if (error instanceof Error && error.name === "ConfigError") return { problem: error.message };
    throw error;
  }
}

interface AppConfigReader {
  readConfig: typeof readConfig;
  appPathsOf: typeof appPathsOf;
}

async function appConfigReader(dir: string): Promise<AppConfigReader> {
  const bundled = await build({
    stdin: {
      contents: 'export { readConfig } from "./app/config.server.ts";\nexport { appPathsOf } from "./worker/page-paths.ts";\n',
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
