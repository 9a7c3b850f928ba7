import { existsSync } from "node:fs";

import { TEST_DSN } from "@edge-monitoring/tunnel/testing";

import { wranglerWorker } from "../../scripts/wrangler-config";
import type { CapturedDataPoint } from "../worker/fixtures/analytics-capture";
import { bundleFixture, root, startWorkerd, type Workerd } from "./workerd";

/** The app's own DSN in the tests: the tunnel's test DSN, of Sentry's SaaS form. */
export const APP_DSN = TEST_DSN;
/** A project of another organisation, which the app's tunnel does not forward for. */
export const FOREIGN_DSN = "https://fedcba9876543210fedcba9876543210@o9.ingest.us.sentry.io/9";
/** The original route's path and query for {@link APP_DSN}: always served, and blocked by EasyPrivacy. */
export const APP_TUNNEL = "/monitoring?o=4501&p=4502&r=us";
/** The route the pages post to for {@link APP_DSN} by default: derived from it (decision 016). */
export const APP_ROUTE = "/6b1xzn8op8";

/** The app's built Worker in workerd. */
export interface RunningWorker extends Workerd {
  /** POSTs `body` to the tunnel ({@link APP_TUNNEL} unless `path` says otherwise), on its own connection. */
  post(body: Uint8Array | ReadableStream<Uint8Array<ArrayBuffer>>, headers?: Record<string, string>, path?: string): Promise<Response>;
  /** Every Analytics Engine data point the Worker wrote, oldest first; only with `captureDataPoints`. */
  dataPoints(): CapturedDataPoint[];
}

/** A Workers Rate Limiting binding's limit: its period is 10 or 60 seconds, which Miniflare checks. */
type RateLimit = { limit: number; period: number };

export interface WorkerOptions {
  /** Replaces `wrangler.toml`'s request rate limit: suites that are not about it send far more than 60 per 10 s. */
  rateLimit?: RateLimit;
  /** Replaces other rate-limit bindings of `wrangler.toml` by name (the spool's byte budgets). */
  rateLimits?: Record<string, RateLimit>;
  /** `false`: no spool bindings, as a deployment without them runs; Sentry's failures then reach the client. */
  spool?: boolean;
  /** A module under the project whose `plant()` runs once the Worker's module has loaded. */
  plant?: string;
  /** Bindings of `wrangler.toml` left out, as an `[env.*]` section that does not repeat them would. */
  without?: readonly string[];
  /** `TUNNEL_ANALYTICS` made to keep every point, for {@link RunningWorker.dataPoints}. */
  captureDataPoints?: boolean;
  /** The V8 inspector's port, for a benchmark that reads the isolate's heap. */
  inspectorPort?: number;
}

/** What keeps the data points, planted in the Worker, and the line it writes each in. */
const CAPTURE = "test/worker/fixtures/analytics-capture.ts";
const CAPTURED_EVENT = "analytics_data_point";

/**
 * The built Worker (`build/index.js`, made by `npm run build`) in workerd, configured as
 * `wrangler.toml` says (vars, rate limiter, analytics dataset, spool), with `vars` laid over the
 * file's own. `plant` names a module whose `plant()` runs when the Worker's module has loaded,
 * before any request (a bug planted in the tunnel, say): the Worker entry's own wiring runs, unchanged.
 */
export async function startWorker(vars: Record<string, string> = {}, options: WorkerOptions = {}): Promise<RunningWorker> {
  const main = `${root}build/index.js`;
  if (!existsSync(main)) throw new Error("build/index.js is missing: run `npm run build` (npm test does) first");
  const declared = wranglerWorker(`${root}wrangler.toml`);
  const plants = [options.plant, options.captureDataPoints ? CAPTURE : undefined].filter((plant) => plant !== undefined);
  const script = plants.length
    ? await bundleFixture(
        plants[0]!,
        `${plants.map((plant, index) => `import { plant as plant${index} } from "./${plant}";\nplant${index}();\n`).join("")}export { default } from "./build/index.js";\n`,
      )
    : main;
  const worker = await startWorkerd({
    // The Remix bundle has a dynamic import(), which Miniflare's module scan refuses: list the module.
    modules: [{ type: "ESModule", path: script }],
    compatibilityDate: declared.compatibilityDate,
    compatibilityFlags: declared.compatibilityFlags,
    bindings: { ...declared.bindings, ...vars },
    ratelimits: Object.fromEntries(
      Object.entries(declared.ratelimits)
        .filter(([name]) => !options.without?.includes(name))
        .map(([name, { namespace_id, simple }]) => [name, { namespace_id, simple: ((name === "TUNNEL_RATE_LIMITER" ? options.rateLimit : options.rateLimits?.[name]) ?? simple) as { limit: number; period: 10 | 60 } }]),
    ),
    analyticsEngineDatasets: declared.analyticsEngineDatasets,
    ...(options.spool === false
      ? {}
      : {
          queueProducers: declared.queueProducers,
          // Batches wait at most 1 s to fill here (the file says 5), so that tests see deliveries promptly.
          queueConsumers: Object.fromEntries(Object.entries(declared.queueConsumers).map(([queue, consumer]) => [queue, { ...consumer, maxBatchTimeout: 1 }])),
          r2Buckets: declared.r2Buckets,
        }),
    assets: { directory: `${root}public`, routerConfig: { has_user_worker: true } },
    ...(options.inspectorPort === undefined ? {} : { inspectorPort: options.inspectorPort }),
  });
  return {
    ...worker,
    post: (body, headers = {}, path = APP_TUNNEL) =>
      worker.fetch(path, { method: "POST", body: body instanceof ReadableStream ? body : new Uint8Array(body), headers }),
    dataPoints() {
      if (!options.captureDataPoints) throw new Error("dataPoints() needs startWorker(…, { captureDataPoints: true })");
      return worker.logLines<CapturedDataPoint>(CAPTURED_EVENT);
    },
  };
}

