/** `import … from "x.js"`, `import "x.js"` and `import("x.js")`, as esbuild writes them. */
const IMPORT = /(?:from|import)\s*\(?\s*["']([^"']+\.js)["']/g;

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
