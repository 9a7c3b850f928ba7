import { createGate, postsToOtherSentryPath } from "./admit.ts";
import { describeTunnel, type TunnelDescription } from "./describe.ts";
import { EVERY_CLIENT, limitBindings, type TunnelBindings, type TunnelRuntime } from "./bindings.ts";
import { breakersFor, consumerBreakersFor, type Delivery } from "./deliver.ts";
import { isRoutine, logToConsole, type TunnelLogLine, type UnversionedLine } from "./log-line.ts";
import { createClientLimiter, type ClientLimiter } from "./request/client-limiter.ts";
import { isTunnelPathSpelling } from "./request/path.ts";
import { RepeatedLines } from "./request/repeated-lines.ts";
import { RECORD_VERSION } from "./shared/record-version.ts";
import type { TunnelSettings } from "./settings.ts";
import { createSpoolBudget } from "./spool/budget.ts";
import { createSpoolConsumer } from "./spool/consumer.ts";
import { createDeadLetterConsumer } from "./spool/dead-letters.ts";
import { deferralSeconds } from "./spool/decision.ts";
import { spoolHeartbeat, type SpoolHeartbeatLine } from "./spool/heartbeat.ts";
import { createSpoolRecorder } from "./spool/record.ts";
import { SpoolStats } from "./spool/stats.ts";
import { createSpool, NO_SPOOL } from "./spool/store.ts";
import { tunnelOf, type Tunnel, type TunnelParts } from "./tunnel.ts";
import { compileAllowList } from "./upstream/allow-list.ts";
import { createClientReports, type ClientReports } from "./upstream/client-reports.ts";
import { SentryLimits } from "./upstream/sentry-limits.ts";

/** Everything a Worker needs to run the tunnel: its `fetch` for the tunnel's paths, and its `queue()`. */
export interface TunnelWorker {
  /**
   * Whether a request is the tunnel's: every spelling of each route and of its CSP report path
   * (the tunnel answers all but the exact ones 404), and what Sentry's SDK posts with
   * `tunnel: true` for a DSN not allowed, which the tunnel refuses 403. Given a path alone, the
   * spellings only.
   */
  serves(request: Request | string): boolean;
  /** The tunnel's answer to a request {@link serves} says is its own; for any other, a 404 of the tunnel's. */
  fetch: Tunnel;
  /** The tunnel's answer to a request it serves ({@link serves}), or `undefined` for the host to answer. */
  handle(request: Request): Promise<Response | undefined>;
  /** The tunnel's part of the host's start line: its paths, and each binding as bound. */
  describe(): TunnelDescription;
  /** Whether a queue is the spool's or its dead-letter queue, whose batches {@link queue} takes. */
  handlesQueue(name: string): boolean;
  /**
   * The Worker's `queue()` handler for the spool and its dead-letter queue. A batch of any other
   * queue is the host's: it is never acknowledged here, but thrown back, to be delivered again.
   */
  queue(batch: MessageBatch<unknown>): Promise<void>;
  /**
   * Whether a client (its `CF-Connecting-IP`) may send one more request now: the tunnel's own
   * per-client limit, which the Worker's other reports can share (decision 017).
   */
  clientAllowed: ClientLimiter;
  /** The isolate's client reports, for what else the Worker drops on a client's account. */
  reports: ClientReports;
  /** What this isolate stored and delivered; `undefined` when no spool is bound. */
  spoolStats: SpoolStats | undefined;
  /**
   * Whether an envelope Sentry took is logged too: `TUNNEL_LOG_FORWARDED=on`, or no
   * `TUNNEL_ANALYTICS` bound to count it. For the host's start line.
   */
  logsForwarded: boolean;
  /**
   * For the Worker's `scheduled()`: reads the spool's depth and the age of its oldest envelope,
   * writes them as a `tunnel_spool_heartbeat` line and data point, and returns that line, whose
   * `status` a host turns into a check-in (`ok`, `error` when `stale`, none when `unread`).
   * `undefined` when no spool is bound.
   */
  spoolHeartbeat(): Promise<SpoolHeartbeatLine | undefined>;
}

/** Every part of one tunnel and its spool, each built once; {@link createTunnelWorker} puts them to work. */
export interface TunnelWorkerParts extends TunnelParts {
  clientAllowed: ClientLimiter;
  reports: ClientReports;
  stats: SpoolStats;
  spoolBound: boolean;
  logsForwarded: boolean;
  consume: (batch: MessageBatch<unknown>) => Promise<void>;
  settleDeadLetters: (batch: MessageBatch<unknown>) => Promise<void>;
  heartbeat: () => Promise<SpoolHeartbeatLine | undefined>;
}

/**
 * The tunnel's one composition root. Builds the tunnel and its spool once per isolate, each part
 * once, sharing between the live path and the spool what one isolate knows: the allow-list, the
 * request limiter, Sentry's rate limits, the breakers, the spool's counts and the client reports.
 * The app's Worker entry uses it, and so does any other Worker (`docs/adopting.md`). The clock,
 * the randomness, `fetch` and the queue (a binding) can be replaced, for simulations and tests.
 */
export function createTunnelWorker(settings: TunnelSettings, bindings: TunnelBindings, runtime: TunnelRuntime = {}): TunnelWorker {
  const parts = buildTunnelParts(settings, bindings, runtime);
  const { spoolQueue, deadLetterQueue } = settings;
  const serves = (request: Request | string) => {
    if (typeof request === "string") return isTunnelPathSpelling(request, parts.gate.paths);
    const { pathname } = new URL(request.url);
    return isTunnelPathSpelling(pathname, parts.gate.paths) || postsToOtherSentryPath(request, pathname, parts.gate);
  };
  const tunnel = tunnelOf(parts);
  return {
    serves,
    fetch: tunnel,
    handle: async (request) => (serves(request) ? tunnel(request) : undefined),
    describe: () => describeTunnel(settings, bindings, parts.logsForwarded),
    handlesQueue: (name) => name === spoolQueue || name === deadLetterQueue,
    async queue(batch) {
      if (batch.queue === spoolQueue) return parts.consume(batch);
      if (batch.queue === deadLetterQueue) return parts.settleDeadLetters(batch);
      throw new Error(
        `The tunnel was handed a batch of queue "${batch.queue}", which is not its spool ("${spoolQueue}") or dead-letter queue ("${deadLetterQueue}"): ` +
          "it acknowledged none of it. Dispatch on tunnel.handlesQueue(batch.queue) in the Worker's queue().",
      );
    },
    clientAllowed: parts.clientAllowed,
    reports: parts.reports,
    spoolStats: parts.spoolBound ? parts.stats : undefined,
    logsForwarded: parts.logsForwarded,
    spoolHeartbeat: parts.heartbeat,
  };
}

/**
 * Whether an envelope Sentry took gets a log line: when `TUNNEL_LOG_FORWARDED=on`, and when no
 * Analytics Engine dataset is bound, since its data point would then count it nowhere.
 */
function forwardedLinesKept(settings: TunnelSettings, bindings: TunnelBindings): boolean {
  return settings.logForwarded || bindings.TUNNEL_ANALYTICS === undefined;
}

/** Missing optional bindings become parts that do nothing: no stage asks whether one is there. */
const NO_ANALYTICS: Pick<AnalyticsEngineDataset, "writeDataPoint"> = { writeDataPoint: () => {} };
/** The parts of {@link createTunnelWorker}, for it and for measurements of the stages (`npm run bench:ablation`). */
export function buildTunnelParts(settings: TunnelSettings, bindings: TunnelBindings, runtime: TunnelRuntime): TunnelWorkerParts {
  const { now = Date.now, random = Math.random, fetch, log: writeLine = logToConsole } = runtime;
  const logsForwarded = forwardedLinesKept(settings, bindings);
  const write = (line: UnversionedLine) => writeLine({ ...line, v: RECORD_VERSION });
  const log = logsForwarded
    ? write
    : (line: UnversionedLine) => {
        if (!isRoutine(line)) write(line);
      };
  const allowList = compileAllowList(settings.allowedDsns, settings.upstreamOrigin);
  const { limiter, clientBudget, totalBudget } = limitBindings(settings, bindings);
  const clientAllowed = limiter ? createClientLimiter(limiter, settings.rateLimitPeriodSeconds, now, write) : EVERY_CLIENT;
  const analytics = bindings.TUNNEL_ANALYTICS ?? NO_ANALYTICS;
  const limits = new SentryLimits(now);
  const stats = new SpoolStats();
  const reports = createClientReports({ allowList, timeoutMs: settings.timeoutMs }, { background: runtime.background, now, fetch });
  const queue = bindings.TUNNEL_SPOOL;
  const bucket = bindings.TUNNEL_SPOOL_BUCKET;
  const delivery: Delivery = {
    maxEnvelopeBytes: settings.maxEnvelopeBytes,
    limits,
    breakers: breakersFor(allowList, now),
    spool: queue ? createSpool({ queue, bucket }) : NO_SPOOL,
    spoolBudget: createSpoolBudget(clientBudget, totalBudget, now),
    spoolStats: stats,
    reports,
    fetch,
    deferral: (failingForMs) => deferralSeconds(failingForMs, settings, random),
  };
  const record = createSpoolRecorder({ log, analytics, stats });
  return {
    gate: createGate(settings, clientAllowed, allowList),
    allowList,
    delivery,
    recorder: { log, refusals: new RepeatedLines<TunnelLogLine>(settings.rateLimitPeriodSeconds, log, now), analytics, now },
    maxEnvelopeBytes: settings.maxEnvelopeBytes,
    timeoutMs: settings.timeoutMs,
    reportError: runtime.reportError ?? (() => {}),
    now,
    clientAllowed,
    reports,
    stats,
    spoolBound: queue !== undefined,
    logsForwarded,
    // Without a queue there is nothing this Worker could have stored: the queue may try again.
    consume: queue
      ? createSpoolConsumer(settings, { queue, bucket, allowList, limits, breakers: consumerBreakersFor(delivery.breakers, now, settings.spoolRetrySeconds), reports, record, now, random, fetch })
      : async (batch) => batch.retryAll(),
    settleDeadLetters: createDeadLetterConsumer({ bucket, reports, record, now }),
    heartbeat: async () => {
      if (!queue) return undefined;
      const line = await spoolHeartbeat(queue, settings.spoolMaxAgeSeconds, now);
      record(line);
      return line;
    },
  };
}
