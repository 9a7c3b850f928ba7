import { RECORD_VERSION_BLOB } from "../shared/record-version.ts";
import type { SpoolHeartbeatLine } from "./heartbeat.ts";

/** What happened to one stored envelope, in the spool's log line. */
type SpoolOutcome = "delivered" | "retried" | "deferred" | "dropped" | "expired" | "not_allowed" | "missing" | "poison" | "dead_lettered";

/** Outcomes that settle nothing: the envelope waits on. A batch's are summed in one line, not one each. */
export const WAITING_OUTCOMES: ReadonlySet<SpoolOutcome> = new Set(["retried", "deferred"]);

export interface SpoolLogLine {
  event: "tunnel_spool";
  outcome: SpoolOutcome;
  /** Sentry's status, when it answered. */
  upstream_status: number | null;
  /** Sentry's failures so far (429s and the edge's holds not counted). */
  tries: number;
  /** How long the envelope has waited since the tunnel received it. */
  age_s: number;
  /** When retried: the delay asked for. */
  retry_in_s: number | null;
}

/**
 * One line per consumer batch: how many of its envelopes Sentry took, how many wait on (retried
 * after Sentry failed or rate-limited them, deferred while it is down), and the queue's depth as
 * the batch reported it.
 */
export interface SpoolBatchLine {
  event: "tunnel_spool_batch";
  messages: number;
  /** Sentry took them: each has a data point, and a line of its own only with `TUNNEL_LOG_FORWARDED=on`. */
  delivered: number;
  retried: number;
  deferred: number;
  /** The queue's backlog when the batch was handed over (`MessageBatch.metadata.metrics`); `null` where the runtime gives none. */
  backlog_count: number | null;
  backlog_bytes: number | null;
  oldest_age_s: number | null;
}

/** Every line the spool writes. */
export type SpoolLine = SpoolLogLine | SpoolBatchLine | SpoolHeartbeatLine;

/** Writes what became of one stored envelope, a batch, or the queue's depth. */
export type SpoolRecorder = (line: SpoolLine) => void;

interface SpoolRecords {
  log: (line: SpoolLine) => void;
  analytics: Pick<AnalyticsEngineDataset, "writeDataPoint">;
}

/**
 * The one recorder of the spool's outcomes, for its consumer, its dead-letter handler and its heartbeat: the
 * log line and an Analytics Engine data point (blobs: `spool`, the outcome;
 * doubles: 0 bytes, the age in ms, Sentry's status).
 */
export function createSpoolRecorder({ log, analytics }: SpoolRecords): SpoolRecorder {
  const write = (point: AnalyticsEngineDataPoint) => {
    try {
      analytics.writeDataPoint(point);
    } catch {
      // As for the live tunnel: the log line has the same facts.
    }
  };
  return (line) => {
    log(line);
    if (line.event === "tunnel_spool_heartbeat") {
      // Blobs: `spool_heartbeat`, the status; doubles: the depth where the batch's point has it.
      write({
        blobs: ["spool_heartbeat", line.status, "", RECORD_VERSION_BLOB],
        doubles: [0, 0, 0, line.backlog_count ?? -1, line.backlog_bytes ?? -1, line.oldest_age_s ?? -1],
        indexes: [""],
      });
      return;
    }
    if (line.event === "tunnel_spool_batch") {
      // Blobs: `spool_batch`; doubles: messages, retried, deferred, backlog count, bytes and oldest age in s, delivered.
      write({
        blobs: ["spool_batch", "", "", RECORD_VERSION_BLOB],
        doubles: [line.messages, line.retried, line.deferred, line.backlog_count ?? -1, line.backlog_bytes ?? -1, line.oldest_age_s ?? -1, line.delivered],
        indexes: [""],
      });
      return;
    }
    write({ blobs: ["spool", line.outcome, "", RECORD_VERSION_BLOB], doubles: [0, line.age_s * 1000, line.upstream_status ?? 0], indexes: [""] });
  };
}
