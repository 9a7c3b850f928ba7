import { existsSync } from "node:fs";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

import { Miniflare } from "miniflare";
import { unstable_readConfig } from "wrangler";

import { fetchOnce } from "./http";

export const root = fileURLToPath(new URL("../..", import.meta.url));

/** A DSN of the Sentry SaaS form, for the app itself. */
export const APP_DSN = "https://0123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4502";

export interface RunningWorker {
  /** Where workerd listens on loopback: the app's own origin, as a browser would see it. */
  origin: string;
  /**
   * A real HTTP request to the Worker, on its own connection. Not `dispatchFetch`: that streams
   * every body without a Content-Length, and how the tunnel treats a declared length is tested.
   */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Lines the Worker wrote to stdout and stderr. */
  logs: string[];
  dispose(): Promise<void>;
}

/**
 * The built Worker (`build/index.js`, made by `npm run build`) in workerd, configured as
 * `wrangler.toml` says, with `vars` laid over the file's own.
 */
export async function startWorker(vars: Record<string, string> = {}): Promise<RunningWorker> {
  const main = `${root}build/index.js`;
  if (!existsSync(main)) throw new Error("build/index.js is missing: run `npm run build` (npm test does) first");
  const config = unstable_readConfig({ config: `${root}wrangler.toml` });
  const logs: string[] = [];
  const collect = (stream: Readable) => {
    let pending = "";
    stream.on("data", (chunk: Buffer) => {
      const lines = (pending + chunk.toString("utf8")).split("\n");
      pending = lines.pop() ?? "";
      logs.push(...lines);
    });
  };
  const miniflare = new Miniflare({
    rootPath: root,
    // The Remix bundle has a dynamic import(), which Miniflare's module scan refuses: list the module.
    modules: [{ type: "ESModule", path: main }],
    compatibilityDate: config.compatibility_date,
    compatibilityFlags: config.compatibility_flags,
    bindings: { ...(config.vars as Record<string, string>), ...vars },
    assets: { directory: `${root}public`, routerConfig: { has_user_worker: true } },
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      collect(stdout);
      collect(stderr);
    },
  });
  const { origin } = await miniflare.ready;
  return {
    origin,
    fetch: (path, init) => fetchOnce(new URL(path, origin), init),
    logs,
    dispose: () => miniflare.dispose(),
  };
}
