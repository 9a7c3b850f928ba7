import type { ServerBuild } from "@remix-run/cloudflare";

/** `import … from "x.js"`, `import "x.js"` and `import("x.js")`, as esbuild writes them. */
const IMPORT = /(?:from|import)\s*\(?\s*["']([^"']+\.js)["']/g;

/** Scripts followed at most: the app's pages load about a dozen. */
const MAX_SCRIPTS = 100;

/**
 * Every script a page of the app can load, as paths: Remix's manifest itself, the client entry's
 * and the routes' modules it names, and every script those import, statically or not (the SDK's
 * chunk is a dynamic import), read from Static Assets as a browser would fetch them.
 */
export async function pageScripts(assets: Fetcher, manifest: ServerBuild["assets"]): Promise<string[]> {
  const origin = "https://assets.invalid";
  const queue = [manifest.url, manifest.entry.module, ...manifest.entry.imports, ...Object.values(manifest.routes).flatMap((route) => [route.module, ...(route.imports ?? [])])];
  const found = new Set<string>();
  while (queue.length > 0 && found.size < MAX_SCRIPTS) {
    const path = queue.shift()!;
    if (found.has(path)) continue;
    found.add(path);
    const response = await assets.fetch(new URL(path, origin));
    if (response.status !== 200) throw new Error(`Static Assets answered ${response.status} for ${path}`);
    for (const match of (await response.text()).matchAll(IMPORT)) {
      const url = new URL(match[1]!, new URL(path, origin));
      if (url.origin === origin) queue.push(url.pathname);
    }
  }
  return [...found];
}
