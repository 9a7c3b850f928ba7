/**
 * The spool's composition: its options, read from code or from a Worker's variables, and its parts,
 * built once per tunnel with the tunnel's shared parts. `@edge-monitoring/tunnel/spool` exports it.
 */
import { BUILD, type CoreParts, type SpoolParts, type TunnelCapability } from "./capability.ts";
import { unboundLimit } from "./from-env.ts";
import { checks, optionsFromTable, READ_FROM, settingNames, type Limiter, type SettingNames } from "../shared/checks.ts";
import { ConfigError, type VariableRead, type VariablesOf } from "../shared/variables.ts";
import { KEEP_STAGE } from "../stages/keep.ts";
import { createSpoolBudget } from "../spool/budget.ts";
import { createSpoolConsumer } from "../spool/consumer.ts";
import { createDeadLetterConsumer } from "../spool/dead-letters.ts";
import { deferralSeconds } from "../spool/decision.ts";
import { SPOOL_DEFAULTS } from "../spool/defaults.ts";
import { spoolHeartbeat } from "../spool/heartbeat.ts";
import { checkedQueues, claimQueues } from "../spool/queues.ts";
import { InHandBudget, readInHand } from "../spool/in-hand.ts";
import { createSpoolRecorder } from "../spool/record.ts";
import { createSpool, type SpoolQueue } from "../spool/store.ts";
import { consumerBreakersFor, upstreamStateOf } from "../upstream/state.ts";

/** The spool's bindings and settings. */
export interface SpoolOptions {
  /** The Queue the envelopes are stored in; this Worker consumes it (`queue()`). */
  queue: SpoolQueue;
  /** Bodies too large for a queue message (128 KB, less the stored headers). @default none: those are answered with the failure */
  bucket?: R2Bucket | undefined;
  /** What one client may store a minute, in units of 256 KiB (Workers Rate Limiting); required unless the tunnel's `limiter` is `"off"`. */
  clientBudget?: Limiter | undefined;
  /** What everyone at this location may store a minute, in units of 256 KiB; required unless the tunnel's `limiter` is `"off"`. */
  totalBudget?: Limiter | undefined;
  /**
   * The queue's name, as `wrangler.toml` gives it: `queue()` takes its batches. Two tunnels in one
   * Worker each name their own.
   * @default "tunnel-spool"
   */
  queueName?: string | undefined;
  /** The dead-letter queue's name, as `wrangler.toml` gives it. @default "tunnel-spool-dead" */
  deadLetterQueueName?: string | undefined;
  /** The first retry's delay in seconds; each further one twice as long, with jitter, up to an hour. @default 10 */
  retrySeconds?: number | undefined;
  /**
   * The memory, in bytes, one isolate holds of bodies over 64 KiB while they go to Sentry, so that
   * one Sentry fails under can still be stored; a body over half of it, or one that finds the rest
   * held, streams as it came, and is lost if Sentry fails under it (503 `not_kept_in_hand`,
   * counted as `buffer_overflow` in Sentry's client reports).
   * @default 33554432 (32 MiB: a quarter of an isolate's 128 MB)
   */
  inHandBytes?: number | undefined;
  /** How long, in seconds, the oldest stored envelope may wait before `spoolHeartbeat()` says `stale`. @default 3600 (an hour) */
  maxAgeSeconds?: number | undefined;
}

/** The spool, for a tunnel's `spool` option. A bad option throws a `ConfigError` naming it when `createTunnel` runs. */
export function spool(options: SpoolOptions): TunnelCapability<"spool"> {
  return { kind: "spool", [BUILD]: (core) => spoolParts(options, core) };
}

/** Each spool option a Worker variable gives, by its name in the README's `wrangler.toml`, and how its text reads. */
const VARIABLES = {
  queueName: ["TUNNEL_SPOOL_QUEUE_NAME", "text"],
  deadLetterQueueName: ["TUNNEL_DEAD_LETTER_QUEUE_NAME", "text"],
  retrySeconds: ["TUNNEL_SPOOL_RETRY_SECONDS", "number"],
  maxAgeSeconds: ["TUNNEL_SPOOL_MAX_AGE_SECONDS", "number"],
} as const satisfies Partial<Record<keyof SpoolOptions, readonly [string, VariableRead]>>;

/** The spool's bindings, by their names. */
const BINDINGS = { queue: "TUNNEL_SPOOL", bucket: "TUNNEL_SPOOL_BUCKET", clientBudget: "TUNNEL_SPOOL_CLIENT_BUDGET", totalBudget: "TUNNEL_SPOOL_TOTAL_BUDGET" } as const;

/** The bindings and variables of the spool, under the names the README's `wrangler.toml` gives them, for `spoolFromEnv`. */
export type SpoolEnv = VariablesOf<typeof VARIABLES> & {
  TUNNEL_SPOOL?: SpoolQueue;
  TUNNEL_SPOOL_BUCKET?: R2Bucket;
  TUNNEL_SPOOL_CLIENT_BUDGET?: Limiter;
  TUNNEL_SPOOL_TOTAL_BUDGET?: Limiter;
};

/**
 * The spool from a Worker's bindings and variables of fixed names, or `undefined` when `TUNNEL_SPOOL`
 * is not bound; refusals name the binding or variable.
 */
export function spoolFromEnv(env: SpoolEnv): TunnelCapability<"spool"> | undefined {
  if (!env.TUNNEL_SPOOL) return undefined;
  const options = optionsFromTable(env, VARIABLES, BINDINGS) as Partial<SpoolOptions>;
  return spool(Object.assign(options, { queue: env.TUNNEL_SPOOL, bucket: env.TUNNEL_SPOOL_BUCKET, clientBudget: env.TUNNEL_SPOOL_CLIENT_BUDGET, totalBudget: env.TUNNEL_SPOOL_TOTAL_BUDGET }));
}

/** The spool's parts, sharing the tunnel's allow-list, client reports and state of Sentry (its limits, the breakers). */
function spoolParts(options: SpoolOptions, core: CoreParts): SpoolParts {
  const names = settingNames(options, "spool.");
  const check = checks(names);
  const { settings, allowList, reports, now, random, fetch } = core;
  const queue = check.binding<SpoolQueue>("queue", options.queue, ["send"], "a Queue binding", "[[queues.producers]]");
  const bucket = options.bucket === undefined ? undefined : check.binding<R2Bucket>("bucket", options.bucket, ["put", "get", "delete"], "an R2 bucket binding", "[[r2_buckets]]");
  const budgets = checkedBudgets(options, core, names);
  const queues = checkedQueues(options, names);
  // A Worker's bindings of fixed names give one spool; options in code can give two the same name.
  if (!(READ_FROM in options)) claimQueues(queues, settings.routes.join(" "), names);
  const retrySeconds = check.positiveInteger("retrySeconds", options.retrySeconds, SPOOL_DEFAULTS.retrySeconds);
  const maxAgeSeconds = check.positiveInteger("maxAgeSeconds", options.maxAgeSeconds, SPOOL_DEFAULTS.maxAgeSeconds);
  const policy = { spoolRetrySeconds: retrySeconds };
  const record = createSpoolRecorder({ log: core.log, analytics: core.analytics });
  const consumerSettings = { ...settings, spoolRetrySeconds: retrySeconds };
  const inHand = new InHandBudget(check.positiveInteger("inHandBytes", options.inHandBytes, SPOOL_DEFAULTS.inHandBytes));
  const upstream = upstreamStateOf(allowList, now);
  const { limits } = upstream;
  const breakers = consumerBreakersFor(upstream.breakers, now, retrySeconds);
  const store = {
    spool: createSpool({ queue, bucket, names: { queue: names("queue"), bucket: names("bucket") } }),
    spoolBudget: createSpoolBudget(
      budgets.client && { limiter: budgets.client, name: names("clientBudget") },
      budgets.total && { limiter: budgets.total, name: names("totalBudget") },
      now,
    ),
    deferral: (failingForMs: number) => deferralSeconds(failingForMs, policy, random),
  };
  return {
    keep: { stage: KEEP_STAGE, parts: { ...upstream, reports, store } },
    readRest: (...rest) => readInHand(inHand, ...rest),
    queue: queues.queue,
    deadLetterQueue: queues.deadLetterQueue,
    consume: createSpoolConsumer(consumerSettings, { queue, bucket, allowList, limits, breakers, reports, record, now, random, fetch }),
    settleDeadLetters: createDeadLetterConsumer({ bucket, reports, record, now }),
    heartbeat: async () => {
      const line = await spoolHeartbeat(queue, maxAgeSeconds, now);
      record(line);
      return line;
    },
    described: {
      spool:
        `on: ${names("queue")}, queue ${queues.queue} and dead letters ${queues.deadLetterQueue}` +
        (budgets.client ? `, bytes held to ${names("clientBudget")} and ${names("totalBudget")}` : "") +
        "; its depth is in each tunnel_spool_batch and tunnel_spool_heartbeat line",
      large_bodies:
        (bucket ? `R2: ${names("bucket")}` : `off: ${names("bucket")} is not given, so only bodies that fit in a message are stored`) +
        `; ${mebibytes(inHand.bytes)} MiB kept in hand of large bodies on their way to Sentry, each up to ${mebibytes(inHand.ceiling)} MiB`,
    },
  };
}

/**
 * The byte budgets: both while the tunnel holds clients to a share, none when its limiter is off,
 * so that a budget left out of an `[env.*]` section stops the Worker instead of letting one client
 * fill the spool.
 */
function checkedBudgets(options: SpoolOptions, core: CoreParts, names: SettingNames): { client: Limiter | undefined; total: Limiter | undefined } {
  const check = checks(names);
  const given = (["clientBudget", "totalBudget"] as const).filter((option) => options[option] !== undefined);
  if (!core.settings.limiter) {
    if (given.length > 0) throw new ConfigError(core.names("limiterOff"), `is off, but ${given.map(names).join(" and ")} ${given.length > 1 ? "are" : "is"} given: remove the setting or the budget`);
    return { client: undefined, total: undefined };
  }
  // Read from the Worker's bindings, what is missing is said as wrangler.toml would fix it.
  const required = (what: string) =>
    READ_FROM in options ? unboundLimit(what) : `is required while the tunnel's limiter is on, or ${what} would have no limit: pass a Workers Rate Limiting binding`;
  return {
    client: check.limiter("clientBudget", options.clientBudget, required("the bytes one client stores in the spool")),
    total: check.limiter("totalBudget", options.totalBudget, required("the bytes every client stores in the spool")),
  };
}

const mebibytes = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
