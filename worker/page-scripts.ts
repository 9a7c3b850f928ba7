import type { ServerBuild } from "@remix-run/cloudflare";
import { scriptsReachable } from "@edge-monitoring/list-watch";

/** Scripts the Worker follows at most: the app's pages load about a dozen. */
const MAX_SCRIPTS = 100;

/**
 * Every script a page of the app can load, as paths: Remix's manifest itself, the client entry's
 * and the routes' modules it names, and every script those import, read from Static Assets as a
 * browser would fetch them.
 */
export async function pageScripts(assets: Fetcher, manifest: ServerBuild["assets"]): Promise<string[]> {
  const origin = "https://assets.invalid";
  const paths = [manifest.url, manifest.entry.module, ...manifest.entry.imports, ...Object.values(manifest.routes).flatMap((route) => [route.module, ...(route.imports ?? [])])];
  const read = async (script: URL) => {
    const response = await assets.fetch(script);
    if (response.status !== 200) throw new Error(`Static Assets answered ${response.status} for ${script.pathname}`);
    return response.text();
  };
  const scripts = await scriptsReachable(paths.map((path) => new URL(path, origin)), origin, read, MAX_SCRIPTS);
  return scripts.map((script) => script.pathname);
}
