import { discardedCategories, type ClientReports } from "../upstream/client-reports.ts";
import type { SpoolRecorder } from "./record.ts";
import { isSpooledEnvelope, plainBody } from "./store.ts";

interface DeadLetterParts {
  bucket: R2Bucket | undefined;
  reports: ClientReports;
  record: SpoolRecorder;
  now: () => number;
}

/**
 * The handler of the spool's dead-letter queue: a message the consumer failed on `max_retries`
 * times (R2 or the queue failing it each time). It is given up at once: its R2 object deleted, its
 * items counted for Sentry, so nothing holding a client's address waits out the queue's retention.
 * Recorded as the consumer records its outcomes: log line, counts and data point.
 */
export function createDeadLetterConsumer({ bucket, reports, record, now }: DeadLetterParts) {
  return async (batch: MessageBatch<unknown>): Promise<void> => {
    for (const message of batch.messages) {
      const envelope = message.body;
      const spooled = isSpooledEnvelope(envelope) ? envelope : undefined;
      if (spooled) {
        if (spooled.key) await bucket?.delete(spooled.key).catch(() => {});
        reports.count(spooled.dsn, "internal_sdk_error", discardedCategories(plainBody(spooled, spooled.body)));
      }
      message.ack();
      const age = spooled ? Math.round((now() - spooled.receivedAt) / 1000) : 0;
      // Not an envelope: nothing the spool stored, so nothing it dropped.
      const outcome = spooled ? "dead_lettered" : "poison";
      record({ event: "tunnel_spool", outcome, upstream_status: null, tries: spooled?.tries ?? 0, age_s: age, retry_in_s: null });
    }
    await reports.flush();
  };
}
