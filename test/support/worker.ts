import { existsSync } from "node:fs";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { unstable_readConfig } from "wrangler";

import { fetchOnce } from "./http";
import { workerdChildren } from "./process-memory";

export const root = fileURLToPath(new URL("../..", import.meta.url));

/** A DSN of the Sentry SaaS form, for the app itself. */
export const APP_DSN = "https://0123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/4502";
/** The original route's path and query for {@link APP_DSN}: always served, and blocked by EasyPrivacy. */
export const APP_TUNNEL = "/monitoring?o=4501&p=4502&r=us";
/** The route the pages post to for {@link APP_DSN} by default: derived from it (decision 016). */
export const APP_ROUTE = "/6b1xzn8op8";

export interface RunningWorker {
  /** Where workerd listens on loopback: the app's own origin, as a browser would see it. */
  origin: string;
  /**
   * A real HTTP request to the Worker, on its own connection. Not `dispatchFetch`: that streams
   * every body without a Content-Length, and how the tunnel treats a declared length is tested.
   */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** POSTs `body` to the tunnel ({@link APP_TUNNEL} unless `path` says otherwise), on its own connection. */
  post(body: Uint8Array | ReadableStream<Uint8Array<ArrayBuffer>>, headers?: Record<string, string>, path?: string): Promise<Response>;
  /** Lines the Worker wrote to stdout and stderr. */
  logs: string[];
  /** The Worker's own structured lines of one kind, parsed, oldest first. */
  logLines<T = Record<string, unknown>>(event: "tunnel" | "tunnel_spool" | "tunnel_start"): T[];
  /** The workerd process that runs it. */
  pid: number;
  /** The Worker's bindings, reached from Node (the spool's queue and bucket, for one). */
  bindings(): Promise<Record<string, unknown>>;
  dispose(): Promise<void>;
}

/** The parts of `wrangler.toml`'s `[[ratelimits]]` and `[[analytics_engine_datasets]]` that Miniflare takes. */
interface RateLimitSettings {
  name: string;
  namespace_id: string;
  simple: { limit: number; period: number };
}
interface DatasetSettings {
  binding: string;
  dataset?: string;
}

export interface WorkerOptions {
  /** Replaces `wrangler.toml`'s request rate limit: suites that are not about it send far more than 60 per 10 s. */
  rateLimit?: { limit: number; period: number };
  /** Replaces other rate-limit bindings of `wrangler.toml` by name (the spool's byte budgets). */
  rateLimits?: Record<string, { limit: number; period: number }>;
  /** `false`: no spool bindings, as a deployment without them runs; Sentry's failures then reach the client. */
  spool?: boolean;
}

/** The parts of `wrangler.toml`'s queues and R2 buckets that Miniflare takes. */
interface QueueSettings {
  producers?: { queue: string; binding: string }[];
  consumers?: { queue: string; max_batch_size?: number; max_retries?: number; dead_letter_queue?: string }[];
}
interface BucketSettings {
  binding: string;
  bucket_name: string;
}

/** The compatibility date and flags of `wrangler.toml`, for every Worker the tests and benchmarks run. */
export function wranglerCompatibility(): { compatibilityDate: string | undefined; compatibilityFlags: string[] } {
  const config = unstable_readConfig({ config: `${root}wrangler.toml` });
  return { compatibilityDate: config.compatibility_date, compatibilityFlags: config.compatibility_flags };
}

/**
 * The built Worker (`build/index.js`, made by `npm run build`) in workerd, configured as
 * `wrangler.toml` says (vars, rate limiter, analytics dataset), with `vars` laid over the file's own.
 */
export async function startWorker(vars: Record<string, string> = {}, options: WorkerOptions = {}): Promise<RunningWorker> {
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
  const before = workerdChildren();
  const miniflare = new Miniflare({
    rootPath: root,
    // The Remix bundle has a dynamic import(), which Miniflare's module scan refuses: list the module.
    modules: [{ type: "ESModule", path: main }],
    ...wranglerCompatibility(),
    bindings: { ...(config.vars as Record<string, string>), ...vars },
    ratelimits: Object.fromEntries(
      (config.ratelimits as RateLimitSettings[]).map(({ name, namespace_id, simple }) => [
        name,
        { namespace_id, simple: (name === "TUNNEL_RATE_LIMITER" ? options.rateLimit : options.rateLimits?.[name]) ?? simple },
      ]),
    ),
    analyticsEngineDatasets: Object.fromEntries(
      (config.analytics_engine_datasets as DatasetSettings[]).map(({ binding, dataset }) => [binding, { dataset: dataset ?? binding }]),
    ),
    ...(options.spool === false ? {} : spoolBindings(config.queues as QueueSettings, config.r2_buckets as BucketSettings[])),
    assets: { directory: `${root}public`, routerConfig: { has_user_worker: true } },
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      collect(stdout);
      collect(stderr);
    },
  });
  const { origin } = await miniflare.ready;
  const [pid] = [...workerdChildren()].filter((child) => !before.has(child));
  if (pid === undefined) throw new Error("the workerd process Miniflare started was not found");
  return {
    pid,
    origin,
    // Joined, not resolved: `//monitoring` must reach the Worker as a path, not as a host.
    fetch: (path, init) => fetchOnce(new URL(`${origin}${path}`), init),
    post: (body, headers = {}, path = APP_TUNNEL) =>
      fetchOnce(new URL(`${origin}${path}`), { method: "POST", body: body instanceof ReadableStream ? body : new Uint8Array(body), headers }),
    logs,
    logLines: (event) => logLinesOf(logs, event),
    bindings: () => miniflare.getBindings(),
    dispose: () => miniflare.dispose(),
  };
}

/** The structured lines of one kind among a Worker's output: `{"event":"tunnel",…}` and the like. */
function logLinesOf<T>(logs: readonly string[], event: string): T[] {
  const prefix = `{"event":${JSON.stringify(event)},`;
  return logs.filter((line) => line.startsWith(prefix)).map((line) => JSON.parse(line) as T);
}

/**
 * The spool's queue and bucket as `wrangler.toml` declares them, in memory. Batches wait at most
 * 1 s to fill here (the file says 5), so that tests see deliveries promptly.
 */
function spoolBindings(queues: QueueSettings, buckets: BucketSettings[]) {
  return {
    queueProducers: Object.fromEntries((queues.producers ?? []).map(({ queue, binding }) => [binding, { queueName: queue }])),
    queueConsumers: Object.fromEntries(
      (queues.consumers ?? []).map(({ queue, max_batch_size, max_retries, dead_letter_queue }) => [
        queue,
        { maxBatchSize: max_batch_size, maxBatchTimeout: 1, maxRetries: max_retries, deadLetterQueue: dead_letter_queue },
      ]),
    ),
    r2Buckets: Object.fromEntries(buckets.map(({ binding, bucket_name }) => [binding, bucket_name])),
  };
}

/**
 * Bundles a fixture (a path under the project: a Worker for workerd, or a script for the browser)
 * as the app's build does, and returns the bundle's path: under `.cache/` (workerd refuses paths
 * above the project), outside `build/`, which is deployed.
 */
export async function bundleFixture(entry: string): Promise<string> {
  const outfile = `${root}.cache/fixtures/${entry.replaceAll("/", "-").replace(/\.ts$/, ".js")}`;
  await build({
    entryPoints: [`${root}${entry}`],
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
