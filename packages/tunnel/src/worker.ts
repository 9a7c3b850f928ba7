import { createGate } from "./admit.ts";
import { breakersFor, type Delivery } from "./deliver.ts";
import { isRoutine, logToConsole, type LogLine } from "./log-line.ts";
import { createClientLimiter, type ClientLimiter } from "./request/client-limiter.ts";
import { isTunnelPathSpelling } from "./request/path.ts";
import type { TunnelBindings, TunnelRuntime, TunnelSettings } from "./settings.ts";
import { createSpoolBudget } from "./spool/budget.ts";
import { createSpoolConsumer } from "./spool/consumer.ts";
import { createDeadLetterConsumer, DEAD_LETTER_QUEUE } from "./spool/dead-letters.ts";
import { createSpoolRecorder } from "./spool/record.ts";
import { SpoolStats } from "./spool/stats.ts";
import { createSpool, NO_SPOOL } from "./spool/store.ts";
import { tunnelOf, type Tunnel, type TunnelParts } from "./tunnel.ts";
import { compileAllowList } from "./upstream/allow-list.ts";
import { createClientReports, type ClientReports } from "./upstream/client-reports.ts";
import { SentryLimits } from "./upstream/sentry-limits.ts";

/** Everything a Worker needs to run the tunnel: its `fetch` for the tunnel's paths, and its `queue()`. */
export interface TunnelWorker {
  /** Whether a path is the tunnel's: every spelling of each route and of its CSP report path (the tunnel answers all but the exact ones 404). */
  serves(pathname: string): boolean;
  fetch: Tunnel;
  /** The Worker's `queue()` handler, for the spool and its dead-letter queue. */
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
  return {
    serves: (pathname) => isTunnelPathSpelling(pathname, parts.gate.paths),
    fetch: tunnelOf(parts),
    queue: (batch) => (batch.queue === DEAD_LETTER_QUEUE ? parts.settleDeadLetters(batch) : parts.consume(batch)),
    clientAllowed: parts.clientAllowed,
    reports: parts.reports,
    spoolStats: parts.spoolBound ? parts.stats : undefined,
    logsForwarded: parts.logsForwarded,
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
/**
 * The type requires the request limiter; a Worker started without it all the same (a benchmark
 * measuring the tunnel's own cost) lets every client through, without asking a binding that is not there.
 */
const EVERY_CLIENT: ClientLimiter = async () => true;

/** The parts of {@link createTunnelWorker}, for it and for measurements of the stages (`npm run bench:ablation`). */
export function buildTunnelParts(settings: TunnelSettings, bindings: TunnelBindings, runtime: TunnelRuntime): TunnelWorkerParts {
  const { now = Date.now, random = Math.random, fetch, log: write = logToConsole } = runtime;
  const logsForwarded = forwardedLinesKept(settings, bindings);
  const log = logsForwarded
    ? write
    : (line: LogLine) => {
        if (!isRoutine(line)) write(line);
      };
  const allowList = compileAllowList(settings.allowedDsns, settings.upstreamOrigin);
  const limiter = bindings.TUNNEL_RATE_LIMITER as TunnelBindings["TUNNEL_RATE_LIMITER"] | undefined;
  const clientAllowed = limiter ? createClientLimiter(limiter, settings.rateLimitPeriodSeconds, now) : EVERY_CLIENT;
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
    spoolBudget: createSpoolBudget(bindings.TUNNEL_SPOOL_CLIENT_BUDGET, bindings.TUNNEL_SPOOL_TOTAL_BUDGET, now),
    spoolStats: stats,
    reports,
    fetch,
  };
  const record = createSpoolRecorder({ log, analytics, stats });
  return {
    gate: createGate(settings, clientAllowed, allowList),
    allowList,
    delivery,
    recorder: { log, analytics, now },
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
    consume: queue ? createSpoolConsumer(settings, { queue, bucket, allowList, limits, reports, record, now, random, fetch }) : async (batch) => batch.retryAll(),
    settleDeadLetters: createDeadLetterConsumer({ bucket, reports, record, now }),
  };
}
