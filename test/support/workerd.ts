import { fileURLToPath } from "node:url";

import { build } from "esbuild";
import { convertV4MiniflareOptions, Miniflare, type V4MiniflareOptions as MiniflareOptions, type V4WorkerOptionsShape as WorkerOptions } from "miniflare";

import { fetchOnce } from "./http";
import { wranglerWorker } from "../../scripts/wrangler-config";
import { workerdChildren } from "./process-memory";

export const root = fileURLToPath(new URL("../..", import.meta.url));

/** A Worker running in workerd through Miniflare, as every test and benchmark starts one. */
export interface Workerd {
  /** Where workerd listens on loopback: the Worker's own origin, as a browser would see it. */
  origin: string;
  /**
   * A real HTTP request to the Worker, on its own connection. Not `dispatchFetch`: that streams
   * every body without a Content-Length, and how the tunnel treats a declared length is tested.
   */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** A JSON request to a fixture: `path` answered with the JSON the fixture returns. */
  call<T>(path: string, input?: unknown): Promise<T>;
  /** Lines the Worker wrote to stdout and stderr, unless started with `output: "drop"`. */
  logs: string[];
  /** The Worker's own structured lines of one kind, parsed, oldest first. */
  logLines<T = Record<string, unknown>>(event: string): T[];
  /** The workerd process that runs it: its CPU time and memory. */
  pid: number;
  /** The Worker's bindings, reached from Node (the spool's queue and bucket, for one). */
  bindings(): Promise<Record<string, unknown>>;
  /** Runs the Worker's `scheduled()` once, as its Cron Trigger `cron` would. */
  scheduled(cron: string): Promise<void>;
  dispose(): Promise<void>;
}

interface Start {
  /** `drop`: read what the Worker prints and keep none of it (benchmarks, where a kept line costs). */
  output?: "keep" | "drop";
}

/** The compatibility date and flags of `wrangler.toml`, for every Worker the tests and benchmarks run. */
export function wranglerCompatibility(): Pick<WorkerOptions, "compatibilityDate" | "compatibilityFlags"> {
  const { compatibilityDate, compatibilityFlags } = wranglerWorker(`${root}wrangler.toml`);
  return { compatibilityDate, compatibilityFlags };
}

/**
 * The one way a test or a benchmark starts workerd: Miniflare with these options, under the
 * project (workerd refuses paths above it), what the Worker prints collected, and the workerd
 * process found, for the tests that read its memory and the benchmarks that read its CPU.
 */
export async function startWorkerd(options: MiniflareOptions, { output = "keep" }: Start = {}): Promise<Workerd> {
  const logs: string[] = [];
  const before = workerdChildren();
  // Miniflare 5 takes a new shape of options; the tests and benchmarks say theirs in the shape
  // Miniflare 4 took, which Miniflare converts.
  const miniflare = new Miniflare(
    convertV4MiniflareOptions({
      // Several Workers (`workers: […]`) each say their own.
      ...("workers" in options ? {} : { rootPath: root }),
      // Miniflare 5 has workerd write structured logs, one per `console.*` call, and hands each over.
      handleStructuredLogs: ({ message }: { message: string }) => {
        if (output === "keep") logs.push(...message.split("\n"));
      },
      ...options,
    } as MiniflareOptions),
  );
  const { origin } = await miniflare.ready.catch(async (error: Error) => {
    await miniflare.dispose().catch(() => {});
    throw new Error(withPlainLogs(error.message), { cause: error });
  });
  const pid = [...workerdChildren()].find((child) => !before.has(child));
  if (pid === undefined) throw new Error("the workerd process Miniflare started was not found");
  return {
    origin: origin,
    pid,
    // Joined, not resolved: `//monitoring` must reach the Worker as a path, not as a host.
    fetch: (path, init) => fetchOnce(new URL(`${origin}${path}`), init),
    async call(path, input) {
      const response = await fetchOnce(new URL(`${origin}${path}`), { method: "POST", body: JSON.stringify(input ?? null) });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`${path} failed in workerd (${response.status}): ${text}`);
      return JSON.parse(text);
    },
    logs,
    logLines: <T>(event: string) => {
      const prefix = `{"event":${JSON.stringify(event)},`;
      return logs.filter((line) => line.startsWith(prefix)).map((line) => JSON.parse(line) as T);
    },
    bindings: () => miniflare.getBindings(),
    async scheduled(cron) {
      const result = await (await miniflare.getWorker()).scheduled({ cron });
      if (result.outcome !== "ok") throw new Error(`scheduled() ended "${result.outcome}"`);
    },
    dispose: () => miniflare.dispose(),
  };
}

/**
 * A start-up failure's message with each structured log line workerd wrote (`{"level":…,"message":…}`)
 * replaced by its message: a Worker's refusal reads as the Worker wrote it.
 */
function withPlainLogs(message: string): string {
  return message
    .split("\n")
    .map((line) => {
      if (!line.startsWith("{")) return line;
      try {
        return String((JSON.parse(line) as { message?: unknown }).message ?? line);
      } catch {
        return line;
      }
    })
    .join("\n");
}

/**
 * A fixture (a Worker under the project, in TypeScript) bundled as the app's build is, and started
 * in workerd with `wrangler.toml`'s compatibility and the given options (bindings and the like).
 */
export async function startFixture(entry: string, options: WorkerOptions = {}, start?: Start): Promise<Workerd> {
  const script = await bundleFixture(entry);
  return startWorkerd({ modules: [{ type: "ESModule", path: script }], ...wranglerCompatibility(), ...options } as MiniflareOptions, start);
}

/**
 * Bundles a fixture (a path under the project: a Worker for workerd, or a script for the browser)
 * as the app's build does, and returns the bundle's path: under `.cache/` (workerd refuses paths
 * above the project), outside `build/`, which is deployed. `contents` bundles that code instead of
 * the file, resolved from the project's root, and writes it under the fixture's name.
 */
export async function bundleFixture(entry: string, contents?: string): Promise<string> {
  const outfile = `${root}.cache/fixtures/${entry.replaceAll("/", "-").replace(/\.ts$/, ".js")}`;
  await build({
    ...(contents === undefined ? { entryPoints: [`${root}${entry}`] } : { stdin: { contents, resolveDir: root, loader: "ts" } }),
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    external: ["node:*", "cloudflare:*"],
    logLevel: "error",
  });
  return outfile;
}
