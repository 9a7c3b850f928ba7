// `wrangler.toml` as Miniflare takes it, read by wrangler's own reader (`unstable_readConfig`,
// pinned with wrangler): the one reader of the file for whatever runs the Worker or checks its
// settings outside `wrangler dev` (the Worker tests and benchmarks, and the check before
// `npm start` and `npm run deploy`), so that each sees the bindings and `[env.*]` as wrangler does.
// Not wrangler's `unstable_getMiniflareWorkerOptions`: it adds `.dev.vars`, a developer's local
// values, which a deploy's check must not see.
import type { Json } from "miniflare";
import { unstable_readConfig } from "wrangler";

/** What this project reads of the Worker's Miniflare options: the bindings it declares and its compatibility. */
export interface DeclaredWorker {
  compatibilityDate: string;
  compatibilityFlags: string[];
  /** `[vars]`, as wrangler gives them: an unquoted number or boolean stays one. */
  bindings: Record<string, Json>;
  ratelimits: Record<string, { namespace_id: string; simple: { limit: number; period: 10 | 60 } }>;
  queueProducers: Record<string, { queueName: string }>;
  queueConsumers: Record<string, { maxBatchSize?: number; maxBatchTimeout?: number; maxRetries?: number; deadLetterQueue?: string }>;
  r2Buckets: Record<string, string>;
  analyticsEngineDatasets: Record<string, { dataset: string }>;
  /** `[triggers] crons`. */
  crons: string[];
}

/** The parts of wrangler's reading of the file used here (its own types do not resolve under this project's Miniflare). */
interface WranglerConfig {
  compatibility_date?: string;
  compatibility_flags: string[];
  vars: Record<string, Json>;
  ratelimits: { name: string; namespace_id: string; simple: { limit: number; period: 10 | 60 } }[];
  queues: {
    producers?: { binding: string; queue: string }[];
    consumers?: { queue: string; max_batch_size?: number; max_batch_timeout?: number; max_retries?: number; dead_letter_queue?: string }[];
  };
  r2_buckets: { binding: string; bucket_name?: string }[];
  analytics_engine_datasets: { binding: string; dataset?: string }[];
  triggers: { crons?: string[] };
}

/** The Worker as `configPath` (and its `[env.<environment>]`) declares it. */
export function wranglerWorker(configPath = "wrangler.toml", environment?: string): DeclaredWorker {
  const config = unstable_readConfig({ config: configPath, env: environment }) as WranglerConfig;
  return {
    compatibilityDate: config.compatibility_date ?? "",
    compatibilityFlags: config.compatibility_flags,
    bindings: config.vars,
    ratelimits: Object.fromEntries(config.ratelimits.map(({ name, namespace_id, simple }) => [name, { namespace_id, simple }])),
    queueProducers: Object.fromEntries((config.queues.producers ?? []).map(({ binding, queue }) => [binding, { queueName: queue }])),
    queueConsumers: Object.fromEntries(
      (config.queues.consumers ?? []).map(({ queue, max_batch_size, max_batch_timeout, max_retries, dead_letter_queue }) => [
        queue,
        { maxBatchSize: max_batch_size, maxBatchTimeout: max_batch_timeout, maxRetries: max_retries, deadLetterQueue: dead_letter_queue },
      ]),
    ),
    r2Buckets: Object.fromEntries(config.r2_buckets.map(({ binding, bucket_name }) => [binding, bucket_name ?? binding])),
    analyticsEngineDatasets: Object.fromEntries(config.analytics_engine_datasets.map(({ binding, dataset }) => [binding, { dataset: dataset ?? binding }])),
    crons: config.triggers.crons ?? [],
  };
}

/** The names `worker` binds besides its variables, as the Worker finds them in its `env`. */
export function boundNames(worker: DeclaredWorker): Set<string> {
  return new Set([worker.ratelimits, worker.queueProducers, worker.r2Buckets, worker.analyticsEngineDatasets].flatMap((declared) => Object.keys(declared)));
}
