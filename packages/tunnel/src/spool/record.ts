import type { SpoolStats } from "./stats.ts";

/** What happened to one stored envelope, in the spool's log line. */
type SpoolOutcome = "delivered" | "retried" | "dropped" | "expired" | "not_allowed" | "missing" | "poison" | "dead_lettered";

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

/** Writes what became of one stored envelope. */
export type SpoolRecorder = (line: SpoolLogLine) => void;

interface SpoolRecords {
  log: (line: SpoolLogLine) => void;
  analytics: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  stats: SpoolStats;
}

/**
 * The one recorder of the spool's outcomes, for its consumer and its dead-letter handler alike: the
 * log line, this isolate's counts, and an Analytics Engine data point (blobs: `spool`, the outcome;
 * doubles: 0 bytes, the age in ms, Sentry's status).
 */
export function createSpoolRecorder({ log, analytics, stats }: SpoolRecords): SpoolRecorder {
  return (line) => {
    log(line);
    if (line.outcome === "delivered") stats.delivered += 1;
    else if (line.outcome !== "retried" && line.outcome !== "poison") stats.dropped += 1;
    try {
      analytics.writeDataPoint({ blobs: ["spool", line.outcome, ""], doubles: [0, line.age_s * 1000, line.upstream_status ?? 0], indexes: [""] });
    } catch {
      // As for the live tunnel: the log line has the same facts.
    }
  };
}
