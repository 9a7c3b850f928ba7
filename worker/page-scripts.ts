import type { ServerBuild } from "@remix-run/cloudflare";

/** `import … from "x.js"`, `import "x.js"` and `import("x.js")`, as esbuild writes them. */
const IMPORT = /(?:from|import)\s*\(?\s*["']([^"']+\.js)["']/g;

/** Scripts the Worker follows at most: the app's pages load about a dozen. */
const MAX_SCRIPTS = 100;

/** The scripts `text` imports, statically or not, as URLs against `base`. */
export function importsOf(text: string, base: string | URL): URL[] {
  return [...text.matchAll(IMPORT)].map((match) => new URL(match[1]!, base));
}

/**
 * Every script of `origin` reachable from `starts` through their imports, static or dynamic (the
 * SDK's chunk is a dynamic import), each read once with `read`, at most `max`: what the Worker's
 * list watch and `npm run check:blockers` ask the blockers about.
 */
export async function scriptsReachable(starts: readonly URL[], origin: string, read: (script: URL) => Promise<string>, max: number): Promise<URL[]> {
  const queue = [...starts];
  const found = new Map<string, URL>();
  while (queue.length > 0 && found.size < max) {
    const script = queue.shift()!;
    if (found.has(script.href) || script.origin !== origin) continue;
    found.set(script.href, script);
    queue.push(...importsOf(await read(script), script));
  }
  return [...found.values()];
}

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
