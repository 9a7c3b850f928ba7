import { envelopeItemTypes } from "../envelope/items.ts";
import type { BodyChunk } from "../shared/body.ts";
import { Deadline } from "../shared/deadline.ts";
import { checkEnvelopeDsn, type DsnAllowList } from "../upstream/allow-list.ts";
import { discardedCategories, type ClientReports, type DiscardReason } from "../upstream/client-reports.ts";
import type { Dsn } from "../upstream/dsn.ts";
import { fateOfFailure, fateOfStatus } from "../upstream/fate.ts";
import { forwardWhole } from "../upstream/forward.ts";
import type { UpstreamBreaker } from "../upstream/breaker.ts";
import type { SentryLimits } from "../upstream/sentry-limits.ts";
import { decideAfterAttempt, deferWhileDown, MAX_ENVELOPE_AGE_MS, type AttemptResult, type SpoolVerdict } from "./decision.ts";
import { depthFields, type QueueDepth } from "./heartbeat.ts";
import { SPOOL_MAX_RETRIES } from "./queues.ts";
import { WAITING_OUTCOMES, type SpoolLogLine, type SpoolRecorder } from "./record.ts";
import { withShiftedSentAt } from "./sent-at-shift.ts";
import { isSpooledEnvelope, plainBody, storedEncoding, unpacked, type SpooledEnvelope, type SpoolQueue } from "./store.ts";

export interface SpoolConsumerSettings {
  timeoutMs: number;
  maxEnvelopeBytes: number;
  spoolRetrySeconds: number;
  /** The app's own project: drops of a DSN no longer allowed are counted there. */
  ownProject: { dsn: Dsn } | undefined;
}

/** The parts the consumer shares with the live tunnel, built once by `createTunnel`. */
export interface SpoolConsumerParts {
  /** The spool's queue: an envelope held past `SPOOL_MAX_RETRIES` deliveries goes back in as a new message. */
  queue: SpoolQueue;
  bucket: R2Bucket | undefined;
  /** The same allow-list as the live tunnel's, checked again at delivery. */
  allowList: DsnAllowList;
  /** The same memory of Sentry's rate limits as the live tunnel's. */
  limits: SentryLimits;
  /**
   * The consumer's breakers, one per upstream: while one is open, the consumer asks Sentry only as
   * its probe allows, and defers the rest, so that its requests to Sentry do not grow with the backlog.
   */
  breakers: ReadonlyMap<string, UpstreamBreaker>;
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
 * {@link decideAfterAttempt} says; while Sentry is known to be down, defers it without asking
 * ({@link deferWhileDown}). Whatever gives an envelope up deletes its R2 object in the same step
 * and counts it in a client report. A retry is the message's own `retry()` with a delay, which
 * writes nothing (decision 029); only the 24-hour expiry gives up on an envelope.
 */
export function createSpoolConsumer(settings: SpoolConsumerSettings, parts: SpoolConsumerParts): (batch: MessageBatch<unknown>) => Promise<void> {
  const consumer: Consumer = { ...parts, settings };
  return (batch) => consumeBatch(batch, consumer);
}

type Consumer = SpoolConsumerParts & { settings: SpoolConsumerSettings };

async function consumeBatch(batch: MessageBatch<unknown>, consumer: Consumer): Promise<void> {
  // Bodies in their messages are in memory already: they go to Sentry together, so that a silent
  // Sentry costs the batch one deadline, not one per message. A body from R2 (up to the envelope
  // maximum) is fetched and sent one at a time, so that the batch holds at most one.
  const inR2 = (message: Message<unknown>) => isSpooledEnvelope(message.body) && message.body.key !== undefined;
  const counted = { delivered: 0, retried: 0, deferred: 0 };
  const consume = async (message: Message<unknown>) => {
    const outcome = await consumeMessage(message, consumer);
    if (outcome === "delivered" || outcome === "retried" || outcome === "deferred") counted[outcome] += 1;
  };
  // The first alone, as the probe of the rest: once it finds Sentry down, the rest wait unasked.
  const [first, ...rest] = batch.messages.filter((message) => !inR2(message));
  if (first) await consume(first);
  await Promise.all(rest.map(consume));
  for (const message of batch.messages.filter(inR2)) await consume(message);
  const metrics = (batch as { metadata?: { metrics?: QueueDepth } }).metadata?.metrics;
  consumer.record({ event: "tunnel_spool_batch", messages: batch.messages.length, ...counted, ...depthFields(metrics, consumer.now()) });
  await consumer.reports.flush();
}

/** Settles one message; its own line unless it waits on, which the batch's line counts. */
async function consumeMessage(message: Message<unknown>, consumer: Consumer): Promise<SpoolLogLine["outcome"]> {
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
  if (!WAITING_OUTCOMES.has(settled.outcome)) consumer.record({ event: "tunnel_spool", ...settled, age_s: Math.round((consumer.now() - receivedAt) / 1000) });
  return settled.outcome;
}

/** One message: what stops it before Sentry is asked, then the attempt and what the decision makes of it. */
async function settle(message: Message<unknown>, consumer: Consumer): Promise<Settled> {
  const envelope = message.body;
  if (!isSpooledEnvelope(envelope)) {
    // Not ours to read: acknowledged and logged, never retried.
    message.ack();
    return { outcome: "poison", upstream_status: null, tries: 0, retry_in_s: null };
  }
  // Every delivery of this message after its first is a wait it came back from.
  const tries = (envelope.tries ?? 0) + Math.max(0, message.attempts - 1);
  const waited = consumer.now() - envelope.receivedAt;
  const givenUp = async (outcome: SpoolLogLine["outcome"], plain: Countable, reason: DiscardReason, countedFor?: string): Promise<Settled> => {
    await giveUp(message, envelope, plain, reason, consumer, countedFor);
    return { outcome, upstream_status: null, tries, retry_in_s: null };
  };
  // What can be counted of it without reading R2: a packed body is inflated only if it is given up.
  const inHand: Countable = async () => {
    const sent = envelope.body && (await unpacked(envelope, envelope.body, consumer.settings.maxEnvelopeBytes));
    return sent ? plainBody({ ...envelope, headers: sent.headers }, sent.body) : undefined;
  };
  // Read as the live tunnel reads it, so that any spelling it let in is known here too.
  const gate = checkEnvelopeDsn(envelope.dsn, consumer.allowList);
  // Taken off the allow-list since it was stored: not sent, and counted in the app's own project.
  if (!gate.ok) return givenUp("not_allowed", inHand, "send_error", consumer.settings.ownProject?.dsn.text);
  if (waited > MAX_ENVELOPE_AGE_MS) return givenUp("expired", inHand, "network_error");
  const breaker = consumer.breakers.get(gate.allowed.upstreamUrl);
  if (breaker && !breaker.allows()) {
    // Sentry is down and another request is its probe: held without a read of R2 or a request.
    const verdict = deferWhileDown(breaker.failingForMs(), tries, waited, consumer.settings, consumer.random);
    return applyVerdict(message, envelope, inHand, verdict, null, consumer);
  }
  const stored = await bodyOf(envelope, consumer.bucket);
  const sent = stored && (await unpacked(envelope, stored, consumer.settings.maxEnvelopeBytes));
  if (!sent) return givenUp("missing", async () => undefined, "internal_sdk_error");
  // The envelope as the client sent it: its own headers and bytes, a packed body inflated.
  const { packed: _packed, ...unpackedEnvelope } = envelope;
  const asSent: SpooledEnvelope = { ...unpackedEnvelope, headers: sent.headers };
  const result = await attempt(asSent, gate.allowed.upstreamUrl, sent.body, waited, consumer);
  if (result.kind === "unavailable") breaker?.failed();
  else if (result.status !== null) breaker?.succeeded();
  const verdict = decideAfterAttempt(result, tries, waited, consumer.settings, consumer.random);
  return applyVerdict(message, envelope, async () => plainBody(asSent, sent.body), verdict, result.status, consumer);
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

/** The body uncompressed, when it can be had, for counting its items should it be given up. */
type Countable = () => Promise<Uint8Array | undefined>;

async function applyVerdict(
  message: Message<unknown>,
  envelope: SpooledEnvelope,
  plain: Countable,
  verdict: SpoolVerdict,
  status: number | null,
  consumer: Consumer,
): Promise<Settled> {
  if (verdict.action === "retry") {
    if (message.attempts < SPOOL_MAX_RETRIES) {
      message.retry({ delaySeconds: verdict.delaySeconds });
    } else {
      // The queue's retries for this message are spent: sent again as a new one before the old
      // one is acknowledged, so that a failure in between can only duplicate it.
      await consumer.queue.send({ ...envelope, tries: verdict.tries }, { contentType: "v8", delaySeconds: verdict.delaySeconds });
      message.ack();
    }
    return { outcome: verdict.outcome, upstream_status: status, tries: verdict.tries, retry_in_s: verdict.delaySeconds };
  }
  await giveUp(message, envelope, plain, verdict.action === "drop" ? verdict.discard : undefined, consumer);
  return { outcome: verdict.outcome, upstream_status: status, tries: envelope.tries ?? 0, retry_in_s: null };
}

/** Gives the envelope up: its R2 object deleted, its items counted for Sentry, the message acknowledged. */
async function giveUp(
  message: Message<unknown>,
  envelope: SpooledEnvelope,
  plain: Countable,
  reason: DiscardReason | undefined,
  { bucket, reports }: Pick<Consumer, "bucket" | "reports">,
  countedFor: string | undefined = envelope.dsn,
): Promise<void> {
  if (envelope.key) await bucket?.delete(envelope.key);
  if (reason && countedFor) reports.count(countedFor, reason, discardedCategories(await plain()));
  message.ack();
}
