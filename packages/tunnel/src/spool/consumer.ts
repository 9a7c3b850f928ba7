import { envelopeItemTypes } from "../envelope/items.ts";
import type { BodyChunk } from "../shared/body.ts";
import { Deadline } from "../shared/deadline.ts";
import { checkEnvelopeDsn, type DsnAllowList } from "../upstream/allow-list.ts";
import { discardedCategories, type ClientReports, type DiscardReason } from "../upstream/client-reports.ts";
import type { Dsn } from "../upstream/dsn.ts";
import { fateOfFailure, fateOfStatus } from "../upstream/fate.ts";
import { forwardWhole } from "../upstream/forward.ts";
import type { SentryLimits } from "../upstream/sentry-limits.ts";
import { decideAfterAttempt, MAX_ENVELOPE_AGE_MS, type AttemptResult, type SpoolVerdict } from "./decision.ts";
import type { SpoolLogLine, SpoolRecorder } from "./record.ts";
import { withShiftedSentAt } from "./sent-at-shift.ts";
import { isSpooledEnvelope, plainBody, storedEncoding, type SpooledEnvelope, type SpoolQueue } from "./store.ts";

export interface SpoolConsumerSettings {
  timeoutMs: number;
  maxEnvelopeBytes: number;
  spoolRetrySeconds: number;
  /** The app's own project: drops of a DSN no longer allowed are counted there. */
  ownProject: { dsn: Dsn } | undefined;
}

/** The parts the consumer shares with the live tunnel, built once by `createTunnelWorker`. */
export interface SpoolConsumerParts {
  /** The spool's queue: a retried envelope goes back in as a new message, so no retry spends one of the queue's. */
  queue: SpoolQueue;
  bucket: R2Bucket | undefined;
  /** The same allow-list as the live tunnel's, checked again at delivery. */
  allowList: DsnAllowList;
  /** The same memory of Sentry's rate limits as the live tunnel's. */
  limits: SentryLimits;
  reports: ClientReports;
  record: SpoolRecorder;
  now: () => number;
  random: () => number;
  fetch: typeof fetch | undefined;
}

type Settled = Omit<SpoolLogLine, "event" | "age_s">;

/**
 * The Worker's `queue()` handler for the spool: sends each stored envelope as the live tunnel would
 * have, to the allow-list's URL for its DSN with the stored headers, and settles it as
 * {@link decideAfterAttempt} says. Whatever gives an envelope up deletes its R2 object in the same
 * step and counts it in a client report. A retry is the same envelope sent again as a new message
 * with a delay, then the old one acknowledged: only the 24-hour expiry gives up on an envelope.
 *
 * Bodies that travel in their messages are sent together; bodies from R2 are held whole (up to the
 * envelope maximum) one at a time.
 */
export function createSpoolConsumer(settings: SpoolConsumerSettings, parts: SpoolConsumerParts): (batch: MessageBatch<unknown>) => Promise<void> {
  const consumer: Consumer = { ...parts, settings };
  return (batch) => consumeBatch(batch, consumer);
}

interface Consumer extends SpoolConsumerParts {
  settings: SpoolConsumerSettings;
}

async function consumeBatch(batch: MessageBatch<unknown>, consumer: Consumer): Promise<void> {
  // Bodies in their messages are in memory already: they go to Sentry together, so that a silent
  // Sentry costs the batch one deadline, not one per message. A body from R2 (up to the envelope
  // maximum) is fetched and sent one at a time, so that the batch holds at most one.
  const inR2 = (message: Message<unknown>) => isSpooledEnvelope(message.body) && message.body.key !== undefined;
  await Promise.all(batch.messages.filter((message) => !inR2(message)).map((message) => consumeMessage(message, consumer)));
  for (const message of batch.messages.filter(inR2)) await consumeMessage(message, consumer);
  await consumer.reports.flush();
}

async function consumeMessage(message: Message<unknown>, consumer: Consumer): Promise<void> {
  const receivedAt = isSpooledEnvelope(message.body) ? message.body.receivedAt : consumer.now();
  let settled: Settled;
  try {
    settled = await settle(message, consumer);
  } catch {
    // R2 or the queue failed us: the queue tries the message again, and after its
    // max_retries hands it to the dead-letter queue, whose handler gives it up cleanly.
    message.retry({ delaySeconds: 10 });
    settled = { outcome: "retried", upstream_status: null, tries: 0, retry_in_s: 10 };
  }
  consumer.record({ event: "tunnel_spool", ...settled, age_s: Math.round((consumer.now() - receivedAt) / 1000) });
}

/** One message: what stops it before Sentry is asked, then the attempt and what the decision makes of it. */
async function settle(message: Message<unknown>, consumer: Consumer): Promise<Settled> {
  const envelope = message.body;
  if (!isSpooledEnvelope(envelope)) {
    // Not ours to deliver and not ours to read: acknowledged and logged, never retried.
    message.ack();
    return { outcome: "poison", upstream_status: null, tries: 0, retry_in_s: null };
  }
  const tries = envelope.tries ?? 0;
  const waited = consumer.now() - envelope.receivedAt;
  const givenUp = async (outcome: SpoolLogLine["outcome"], stored: Uint8Array | undefined, reason: DiscardReason, countedFor?: string): Promise<Settled> => {
    await giveUp(message, envelope, stored, reason, consumer, countedFor);
    return { outcome, upstream_status: null, tries, retry_in_s: null };
  };
  // Read as the live tunnel reads it, so that any spelling it let in is known here too.
  const gate = checkEnvelopeDsn(envelope.dsn, consumer.allowList);
  // Taken off the allow-list since it was stored: not sent, and counted in the app's own project.
  if (!gate.ok) return givenUp("not_allowed", envelope.body, "send_error", consumer.settings.ownProject?.dsn.text);
  if (waited > MAX_ENVELOPE_AGE_MS) return givenUp("expired", envelope.body, "network_error");
  const stored = await bodyOf(envelope, consumer.bucket);
  if (!stored) return givenUp("missing", undefined, "internal_sdk_error");
  const result = await attempt(envelope, gate.allowed.upstreamUrl, stored, waited, consumer);
  const verdict = decideAfterAttempt(result, tries, waited, consumer.settings, consumer.random);
  return applyVerdict(message, envelope, stored, verdict, result.status, consumer);
}

async function bodyOf(envelope: SpooledEnvelope, bucket: R2Bucket | undefined): Promise<BodyChunk | undefined> {
  if (envelope.body) return envelope.body as BodyChunk;
  const object = await bucket?.get(envelope.key!);
  return object ? new Uint8Array(await object.arrayBuffer()) : undefined;
}

/** Sends the stored envelope as the live tunnel would have, unless Sentry's limits hold it back. */
async function attempt(envelope: SpooledEnvelope, url: string, stored: BodyChunk, waited: number, consumer: Consumer): Promise<AttemptResult> {
  const { limits, settings } = consumer;
  const encoding = storedEncoding(envelope);
  const itemTypes = () => (encoding === "identity" ? envelopeItemTypes(stored) : undefined);
  const held = limits.refusal(envelope.dsn, itemTypes);
  if (held) return { kind: "rate_limited", status: null, retryAfterSeconds: Number(held["retry-after"]) };

  const body = (await withShiftedSentAt(stored, encoding, waited, settings.maxEnvelopeBytes)) ?? stored;
  const deadline = new Deadline(settings.timeoutMs);
  try {
    const forwarded = await forwardWhole({ url, headers: envelope.headers, body, deadline, fetch: consumer.fetch });
    if (!forwarded.ok) {
      // A body in hand fails only on Sentry's account: not reached, too slow, or a redirect.
      return { kind: fateOfFailure(forwarded.reason) === "refused" ? "refused" : "unavailable", status: null };
    }
    const { status, headers } = forwarded.answer;
    limits.record(envelope.dsn, status, headers);
    const fate = fateOfStatus(status);
    if (fate !== "rate_limited") return { kind: fate, status };
    const after = limits.refusal(envelope.dsn, itemTypes)?.["retry-after"];
    return { kind: "rate_limited", status, retryAfterSeconds: after ? Number(after) : 60 };
  } finally {
    deadline.end();
  }
}

async function applyVerdict(
  message: Message<unknown>,
  envelope: SpooledEnvelope,
  stored: Uint8Array,
  verdict: SpoolVerdict,
  status: number | null,
  consumer: Consumer,
): Promise<Settled> {
  if (verdict.action === "retry") {
    // Sent again before the old one is acknowledged: a failure in between can only duplicate it.
    await consumer.queue.send({ ...envelope, tries: verdict.tries }, { contentType: "v8", delaySeconds: verdict.delaySeconds });
    message.ack();
    return { outcome: "retried", upstream_status: status, tries: verdict.tries, retry_in_s: verdict.delaySeconds };
  }
  await giveUp(message, envelope, stored, verdict.action === "drop" ? verdict.discard : undefined, consumer);
  return { outcome: verdict.outcome, upstream_status: status, tries: envelope.tries ?? 0, retry_in_s: null };
}

/** Gives the envelope up: its R2 object deleted, its items counted for Sentry, the message acknowledged. */
async function giveUp(
  message: Message<unknown>,
  envelope: SpooledEnvelope,
  stored: Uint8Array | undefined,
  reason: DiscardReason | undefined,
  { bucket, reports }: Pick<Consumer, "bucket" | "reports">,
  countedFor: string | undefined = envelope.dsn,
): Promise<void> {
  if (envelope.key) await bucket?.delete(envelope.key);
  if (reason && countedFor) reports.count(countedFor, reason, discardedCategories(plainBody(envelope, stored)));
  message.ack();
}
