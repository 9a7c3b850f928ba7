/**
 * What `Queue.metrics()` answers, and a consumer batch's `metadata.metrics`, declared here so that
 * the package's types do not need the newest Workers types.
 */
export interface QueueDepth {
  backlogCount: number;
  backlogBytes: number;
  oldestMessageTimestamp?: Date;
}

/** The queue's own count of what waits in it (`Queue.metrics()`); older runtimes have none. */
export interface MeasurableQueue {
  metrics?(): Promise<QueueDepth>;
}

/**
 * The spool's heartbeat: how deep the queue is, and whether its oldest envelope has waited longer
 * than `TUNNEL_SPOOL_MAX_AGE_SECONDS`. Written by a Cron Trigger, so that the depth is known while
 * no batch is consumed, and so that a check-in can tell Sentry the spool is alive.
 */
export interface SpoolHeartbeatLine {
  event: "tunnel_spool_heartbeat";
  /**
   * `ok`; `stale`: the oldest envelope has waited past `max_age_s` (Sentry failing that long, or
   * the consumer stuck); `unread`: the queue's count could not be read, so nothing is known.
   */
  status: "ok" | "stale" | "unread";
  backlog_count: number | null;
  backlog_bytes: number | null;
  oldest_age_s: number | null;
  max_age_s: number;
}

/** The depth fields of the spool's lines, from what the queue reported; each `null` where it reported nothing. */
export function depthFields(metrics: QueueDepth | undefined, now: number): Pick<SpoolHeartbeatLine, "backlog_count" | "backlog_bytes" | "oldest_age_s"> {
  const oldest = metrics?.oldestMessageTimestamp;
  return {
    backlog_count: metrics?.backlogCount ?? null,
    backlog_bytes: metrics?.backlogBytes ?? null,
    oldest_age_s: oldest ? Math.max(0, Math.round((now - new Date(oldest).getTime()) / 1000)) : null,
  };
}

/** Reads the queue's count once; never throws, an unreadable count is its own status. */
export async function spoolHeartbeat(queue: MeasurableQueue, maxAgeSeconds: number, now: () => number): Promise<SpoolHeartbeatLine> {
  const unread: SpoolHeartbeatLine = { event: "tunnel_spool_heartbeat", status: "unread", ...depthFields(undefined, 0), max_age_s: maxAgeSeconds };
  let metrics: QueueDepth;
  try {
    if (!queue.metrics) return unread;
    metrics = await queue.metrics();
  } catch {
    return unread;
  }
  const depth = depthFields(metrics, now());
  return { ...unread, ...depth, status: depth.oldest_age_s !== null && depth.oldest_age_s > maxAgeSeconds ? "stale" : "ok" };
}
