import { createGate, postsToOtherSentryPath } from "../stages/admit.ts";
import { BUILD, type CompressedParts, type CoreParts, type CspParts, type SpoolParts } from "./capability.ts";
import { describeTunnel, type TunnelDescription } from "./describe.ts";
import type { Delivery } from "../stages/deliver.ts";
import { isRoutine, logToConsole, type TunnelLogLine, type UnversionedLine } from "../stages/log-line.ts";
import type { TunnelOptions, TunnelRuntime } from "./options.ts";
import { checks, settingNames } from "../shared/checks.ts";
import { createClientLimiter, LIMITER_PERIOD_SECONDS, type ClientLimiter } from "../request/client-limiter.ts";
import { isTunnelPathSpelling, reportPathOf } from "../request/path.ts";
import { RepeatedLines } from "../request/repeated-lines.ts";
import { RECORD_VERSION } from "../shared/record-version.ts";
import { settingsOf, tunnelUrlFor, type TunnelSettings } from "./settings.ts";
import type { SpoolHeartbeatLine } from "../spool/heartbeat.ts";
import { tunnelOf, type TunnelParts } from "../stages/tunnel.ts";
import { compileAllowList } from "../upstream/allow-list.ts";
import { createClientReports, type ClientReports } from "../upstream/client-reports.ts";

/** One tunnel, as `createTunnel` builds it: what a Worker's handlers call. */
export interface TunnelWorker {
  /**
   * The tunnel's answer to a request of its own, or `undefined` for the host to answer. Its own:
   * every spelling of each route and of its CSP report path (all but the exact ones answered 404),
   * and what Sentry's SDK posts with `tunnel: true` for a DSN not allowed (answered 403).
   */
  handle(request: Request): Promise<Response | undefined>;
  /**
   * The `tunnel` to give a page's Sentry SDK of any version that reports with `dsn` (by default
   * the tunnel's own): the route, with the query `/monitoring` requires. `undefined` for a DSN not
   * allowed, or none. A page whose SDK is 11.12 or later can say `tunnel: true` instead.
   */
  pageUrl(dsn?: string): string | undefined;
  /**
   * Where the pages' CSP reports go (`report-uri`): the route's report path; `undefined` without
   * `cspReports` or without a `dsn` to send them to.
   */
  readonly cspReportPath: string | undefined;
  /** What the tunnel serves and what it is bound to, for the Worker's start line. */
  describe(): TunnelDescription;
  /** Whether a queue is the spool's or its dead-letter queue, whose batches {@link queue} takes. */
  handlesQueue(name: string): boolean;
  /**
   * The Worker's `queue()` handler for the spool and its dead-letter queue. A batch of any other
   * queue is the host's: it is never acknowledged here, but thrown back, to be delivered again.
   */
  queue(batch: MessageBatch<unknown>): Promise<void>;
  /**
   * For the Worker's `scheduled()`: reads the spool's depth and the age of its oldest envelope,
   * writes them as a `tunnel_spool_heartbeat` line and data point, and returns that line, whose
   * `status` a host turns into a check-in (`ok`, `error` when `stale`, none when `unread`).
   * `undefined` when there is no spool.
   */
  spoolHeartbeat(): Promise<SpoolHeartbeatLine | undefined>;
  /**
   * For a Worker that also reports its own events on a client's account: the tunnel's per-client
   * share, so that one client's requests cost one budget whatever they make the Worker send.
   */
  readonly clientShare: ClientShare;
}

/** The tunnel's per-client share and its client reports, for what else a Worker sends on a client's account. */
export interface ClientShare {
  /** Whether a client (its `CF-Connecting-IP`) may send one more request now; always true when the limiter is `"off"`. */
  allows: ClientLimiter;
  /** Counts, in Sentry's client reports of `dsn`'s project, what the Worker dropped on a client's account. */
  reports: ClientReports;
  /** The limiter's period in seconds: how long a refused client is told to wait (`Retry-After`). */
  periodSeconds: number;
}

/**
 * Builds the tunnel once, from its options: call it once per isolate, once per tunnel (at the
 * module's top, where `env` of `cloudflare:workers` is read). A bad option throws a `ConfigError`
 * naming it, so that the Worker does not start. The clock, the randomness, `fetch` and the log
 * can be replaced, for simulations and tests.
 */
export function createTunnel(options: TunnelOptions, runtime: TunnelRuntime = {}): TunnelWorker {
  const { names, settings, core, spool, csp, parts } = assembled(options, runtime);
  const tunnel = tunnelOf(parts);
  // Methods, not arrow functions: wrangler's keep_names wraps each arrow property in a call that
  // every adopter's Worker would upload.
  return {
    async handle(request) {
      const { pathname } = new URL(request.url);
      const serves = isTunnelPathSpelling(pathname, parts.gate.paths) || postsToOtherSentryPath(request, pathname, parts.gate);
      return serves ? tunnel(request) : undefined;
    },
    pageUrl(dsn) {
      return tunnelUrlFor(settings, dsn);
    },
    cspReportPath: parts.gate.reports && reportPathOf(settings.route),
    describe() {
      return describeTunnel(settings, names, spool?.described, { csp: csp !== undefined, compressed: options.compressedBodies !== undefined });
    },
    handlesQueue(name) {
      return name === spool?.queue || name === spool?.deadLetterQueue;
    },
    async queue(batch) {
      if (spool && batch.queue === spool.queue) return spool.consume(batch);
      if (spool && batch.queue === spool.deadLetterQueue) return spool.settleDeadLetters(batch);
      throw new Error(`The tunnel acknowledged none of this batch: queue "${batch.queue}" is not its own. Dispatch on tunnel.handlesQueue(batch.queue) in queue().`);
    },
    async spoolHeartbeat() {
      return spool?.heartbeat();
    },
    clientShare: { allows: parts.gate.clientAllowed, reports: core.reports, periodSeconds: LIMITER_PERIOD_SECONDS },
  };
}

/**
 * Every part of one tunnel, each built once: its checked settings, what it shares with its
 * capabilities, theirs, and the live path's. `createTunnel` puts them to work; measurements of the
 * stages take them apart (`npm run bench:ablation`).
 * @internal
 */
export function assembled(options: TunnelOptions, runtime: TunnelRuntime) {
  const names = settingNames(options);
  const settings = settingsOf(options, names);
  const core = coreParts(settings, names, options.analytics, runtime);
  const spool = options.spool?.[BUILD](core);
  const csp = options.cspReports?.[BUILD](core);
  const compressed = options.compressedBodies?.[BUILD](core);
  return { names, settings, core, spool, csp, parts: tunnelParts(core, runtime, spool, csp, compressed) };
}

/** Missing optional bindings become parts that do nothing: no stage asks whether one is there. */
const NO_ANALYTICS: Pick<AnalyticsEngineDataset, "writeDataPoint"> = { writeDataPoint() {} };

/** What one tunnel's live path and its capabilities share, each built once: the allow-list, the client reports and the log. */
function coreParts(settings: TunnelSettings, names: CoreParts["names"], analytics: CoreParts["analytics"] | undefined, runtime: TunnelRuntime): CoreParts {
  const { now = Date.now, random = Math.random, fetch, log: writeLine = logToConsole } = runtime;
  const write = (line: UnversionedLine) => writeLine({ ...line, v: RECORD_VERSION });
  const allowList = compileAllowList(settings.allowedDsns, settings.upstreamOrigin);
  return {
    settings,
    names,
    allowList,
    reports: createClientReports({ allowList, timeoutMs: settings.timeoutMs }, { background: runtime.background, now, fetch }),
    log: settings.logForwarded
      ? write
      : (line) => {
          if (!isRoutine(line)) write(line);
        },
    analytics:
      analytics === undefined
        ? NO_ANALYTICS
        : checks(names).binding("analytics", analytics, ["writeDataPoint"], "a Workers Analytics Engine dataset", "[[analytics_engine_datasets]]"),
    now,
    random,
    fetch,
  };
}

/** With the limiter `"off"`, said on purpose: every client through, nothing asked. */
const NO_LIMIT: ClientLimiter = async () => true;

/** The parts of the live path. */
function tunnelParts(core: CoreParts, runtime: TunnelRuntime, spool?: SpoolParts, csp?: CspParts, compressed?: CompressedParts): TunnelParts {
  const { settings, now, log } = core;
  const clientAllowed = settings.limiter ? createClientLimiter(settings.limiter, LIMITER_PERIOD_SECONDS, now, log) : NO_LIMIT;
  const delivery: Delivery = { maxEnvelopeBytes: settings.maxEnvelopeBytes, reports: core.reports, fetch: core.fetch, keep: spool?.keep ?? csp?.keep };
  return {
    gate: createGate(settings, clientAllowed, core.allowList, csp !== undefined),
    allowList: core.allowList,
    delivery,
    recorder: {
      log,
      repeated: new RepeatedLines<TunnelLogLine>(LIMITER_PERIOD_SECONDS, log, now),
      countsRoutine: settings.logForwarded && !settings.logForwardedAsked,
      analytics: core.analytics,
      now,
    },
    forwardReport: csp?.forward,
    inflate: compressed?.scan,
    readRest: spool?.readRest,
    maxEnvelopeBytes: settings.maxEnvelopeBytes,
    timeoutMs: settings.timeoutMs,
    reportError: runtime.reportError ?? (() => {}),
    now,
  };
}
