import type { TunnelLogLine } from "./tunnel.server";

/**
 * One Workers Analytics Engine data point per envelope. Blobs: outcome, reason, region. Doubles:
 * bytes, duration in ms, status. Index: the project, so that sampling keeps projects apart.
 */
export function tunnelDataPoint(line: TunnelLogLine): AnalyticsEngineDataPoint {
  return {
    blobs: [line.outcome, line.reason ?? "", line.region ?? ""],
    doubles: [line.bytes ?? 0, line.duration_ms, line.status],
    indexes: [line.project ?? ""],
  };
}
