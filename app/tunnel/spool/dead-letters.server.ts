import { discardedCategories } from "../upstream/client-reports.server";
import { logToConsole, type SpoolConsumerRuntime } from "./consumer.server";
import { isSpooledEnvelope, plainBody } from "./store.server";

/** The spool's dead-letter queue, as `wrangler.toml` names it: its batches go to {@link createDeadLetterConsumer}. */
export const DEAD_LETTER_QUEUE = "tunnel-spool-dead";

/**
 * The handler of the spool's dead-letter queue: a message the consumer failed on `max_retries`
 * times (R2 or the queue failing it each time). It is given up at once: its R2 object deleted, its
 * items counted for Sentry, so nothing holding a client's address waits out the queue's retention.
 */
export function createDeadLetterConsumer(runtime: Pick<SpoolConsumerRuntime, "bucket" | "reports" | "stats" | "log" | "now">) {
  const { bucket, reports, stats, log = logToConsole, now = Date.now } = runtime;
  return async (batch: MessageBatch<unknown>): Promise<void> => {
    for (const message of batch.messages) {
      const envelope = message.body;
      if (isSpooledEnvelope(envelope)) {
        if (envelope.key) await bucket?.delete(envelope.key).catch(() => {});
        reports?.count(envelope.dsn, "internal_sdk_error", discardedCategories(plainBody(envelope, envelope.body)));
        if (stats) stats.dropped += 1;
      }
      message.ack();
      const age = isSpooledEnvelope(envelope) ? Math.round((now() - envelope.receivedAt) / 1000) : 0;
      log({ event: "tunnel_spool", outcome: "dead_lettered", upstream_status: null, tries: isSpooledEnvelope(envelope) ? (envelope.tries ?? 0) : 0, age_s: age, retry_in_s: null });
    }
    await reports?.flush();
  };
}

