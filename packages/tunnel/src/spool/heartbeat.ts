/** What `Queue.metrics()` answers, declared here so that the package's types do not need the newest Workers types. */
interface QueueDepth {
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

/** Reads the queue's count once; never throws, an unreadable count is its own status. */
export async function spoolHeartbeat(queue: MeasurableQueue, maxAgeSeconds: number, now: () => number): Promise<SpoolHeartbeatLine> {
  const unread: SpoolHeartbeatLine = { event: "tunnel_spool_heartbeat", status: "unread", backlog_count: null, backlog_bytes: null, oldest_age_s: null, max_age_s: maxAgeSeconds };
  let metrics: QueueDepth;
  try {
    if (!queue.metrics) return unread;
    metrics = await queue.metrics();
  } catch {
    return unread;
  }
  const oldest = metrics.oldestMessageTimestamp;
  const oldestAgeSeconds = oldest ? Math.max(0, Math.round((now() - new Date(oldest).getTime()) / 1000)) : null;
  return {
    ...unread,
    status: oldestAgeSeconds !== null && oldestAgeSeconds > maxAgeSeconds ? "stale" : "ok",
    backlog_count: metrics.backlogCount,
    backlog_bytes: metrics.backlogBytes,
    oldest_age_s: oldestAgeSeconds,
  };
}
