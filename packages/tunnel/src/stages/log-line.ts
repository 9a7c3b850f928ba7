import type { Answer, TunnelAnswerCode, TunnelOutcome } from "./answers.ts";
import type { LimiterLine } from "../request/client-limiter.ts";
import type { TunnelQuery } from "../request/query.ts";
import type { RepeatedLines } from "../request/repeated-lines.ts";
import { RECORD_VERSION_BLOB, type RECORD_VERSION } from "../shared/record-version.ts";
import type { SpoolLine } from "../spool/record.ts";

/** The one log line per request; it never holds the DSN's key, the client's IP or a cookie. */
export interface TunnelLogLine {
  event: "tunnel";
  /** What was posted: an envelope to a route, or a CSP report to a route's report path. */
  kind: "envelope" | "security_report";
  /** `forwarded`: Sentry answered (whatever its status); `spooled`: stored for later; `rejected`: refused here; `failed`: Sentry could not be reached and nothing was stored, or a bug. */
  outcome: TunnelOutcome;
  reason: TunnelAnswerCode | null;
  status: number;
  org: string | null;
  project: string | null;
  region: string | null;
  bytes: number | null;
  upstream_status: number | null;
  duration_ms: number;
  /** On a `spool_unavailable`: the spool's binding that failed or did not answer (`TUNNEL_SPOOL`, `spool.bucket`). */
  binding?: string;
  /**
   * The identical lines held back before this one, at most one being written per window of the
   * limiter's period: on a refusal's line (`rejected`), the same client's refusals of that reason;
   * on the line of an envelope stored while Sentry is known down (`spooled`, the breaker open and
   * Sentry not asked), the others of that project the isolate stored so.
   */
  repeats?: number;
}

/** What a request's stages learnt about it, for its log line. */
export interface RequestFacts {
  kind: TunnelLogLine["kind"];
  /** The project it was for: the query's, then the DSN's once that is read. */
  query: TunnelQuery | undefined;
  bytes: number | null;
  upstreamStatus: number | null;
  /** Answered without asking Sentry, which is known to be down: stored, or not, as the answer says. */
  sentryKnownDown?: true | undefined;
}

export const NO_FACTS: RequestFacts = { kind: "envelope", query: undefined, bytes: null, upstreamStatus: null };

/** A line as the tunnel's stages make it, before it is written. */
export type UnversionedLine = TunnelLogLine | SpoolLine | LimiterLine;

/** Every structured line the tunnel writes: one per request, and the spool's, each with the record's version. */
export type LogLine = UnversionedLine & { v: typeof RECORD_VERSION };

export interface Recorder {
  log: (line: TunnelLogLine) => void;
  /**
   * Where lines that repeat go instead: a refusal's, one per client, reason and window; that of an
   * envelope stored while Sentry is known down, and, with `countsRoutine`, of one Sentry took, one
   * per project, status and window.
   */
  repeated: RepeatedLines<TunnelLogLine>;
  /**
   * No Analytics Engine dataset to count them, and no line for each asked for (`logForwarded`):
   * the envelopes Sentry took and the preflights are counted in lines per window, not written alone.
   */
  countsRoutine: boolean;
  analytics: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  /** The tunnel's clock, which also stamped the request's arrival. */
  now: () => number;
}

/** Writes the request's log line (one that repeats as {@link Recorder.repeated} allows) and its Analytics Engine data point. */
export function recordRequest(answer: Answer, facts: RequestFacts, receivedAt: number, client: string | null, { log, repeated, countsRoutine, analytics, now }: Recorder): void {
  const { query } = facts;
  const line: TunnelLogLine = {
    event: "tunnel",
    kind: facts.kind,
    outcome: answer.outcome,
    reason: answer.code,
    status: answer.response.status,
    org: query?.org ?? null,
    project: query?.project ?? null,
    region: query?.region ?? null,
    bytes: facts.bytes,
    upstream_status: facts.upstreamStatus,
    duration_ms: now() - receivedAt,
    ...(answer.binding === undefined ? {} : { binding: answer.binding }),
  };
  if (line.outcome === "rejected") repeated.say(client, `${line.kind} ${line.reason} ${line.status}`, line);
  // While Sentry is down, every envelope stored unasked is the same news: no client's, but its
  // project's; so is every envelope Sentry took, where no data point counts it. One that could not
  // be stored is a loss, and keeps a line of its own.
  else if ((facts.sentryKnownDown && line.outcome === "spooled") || (countsRoutine && isRoutine(line))) {
    repeated.say(null, `${line.kind} ${line.reason ?? line.upstream_status} ${line.org}/${line.project}/${line.region}`, line);
  } else {
    repeated.flush();
    log(line);
  }
  try {
    analytics.writeDataPoint(tunnelDataPoint(line));
  } catch {
    // Metrics are not worth failing an envelope for; the log line above has the same facts.
  }
}

/**
 * A line that needs no look: an envelope Sentry took with a 2xx, live or from the spool (its
 * batch's line counts those), or a partner's preflight. Its data point counts it all the same;
 * `TUNNEL_LOG_FORWARDED=on` logs it too.
 */
export function isRoutine(line: UnversionedLine): boolean {
  if (line.event === "tunnel_spool") return line.outcome === "delivered";
  if (line.event !== "tunnel") return false;
  if (line.outcome === "preflight") return true;
  return line.outcome === "forwarded" && line.upstream_status !== null && line.upstream_status >= 200 && line.upstream_status < 300;
}

export function logToConsole(line: LogLine): void {
  console.log(JSON.stringify(line));
}

/**
 * One Workers Analytics Engine data point per envelope. Blobs: outcome, reason, region, the record's version. Doubles:
 * bytes, duration in ms, status, Sentry's status (0 when it was not asked or did not answer).
 * Index: the project, so that sampling keeps projects apart. Positions are only ever added:
 * operators' queries and dashboards name them.
 */
function tunnelDataPoint(line: TunnelLogLine): AnalyticsEngineDataPoint {
  return {
    blobs: [line.outcome, line.reason ?? "", line.region ?? "", RECORD_VERSION_BLOB],
    doubles: [line.bytes ?? 0, line.duration_ms, line.status, line.upstream_status ?? 0],
    indexes: [line.project ?? ""],
  };
}
