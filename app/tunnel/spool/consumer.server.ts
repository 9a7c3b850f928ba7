import { checkEnvelopeDsn, compileAllowList, type DsnAllowList } from "../upstream/allow-list.server";
import { envelopeItemTypes } from "../envelope/items.server";
import type { BodyChunk } from "../shared/body.server";
import { Deadline } from "../shared/deadline.server";
import type { Dsn } from "../upstream/dsn.server";
import type { ClientReports, DiscardReason } from "../upstream/client-reports.server";
import { discardedCategories } from "../upstream/client-reports.server";
import { forwardWhole } from "../upstream/forward.server";
import type { SentryLimits } from "../upstream/sentry-limits.server";
import { decideAfterAttempt, MAX_ENVELOPE_AGE_MS, type AttemptResult, type SpoolVerdict } from "./decision.server";
import { withShiftedSentAt } from "./sent-at-shift.server";
import type { SpoolStats } from "./stats.server";
import { isSpooledEnvelope, plainBody, storedEncoding, type SpooledEnvelope } from "./store.server";

/** What happened to one stored envelope, in the spool's log line. */
type SpoolOutcome =
  | "delivered"
  | "retried"
  | "dropped"
  | "expired"
  | "not_allowed"
  | "missing"
  | "poison"
  | "dead_lettered";

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

export interface SpoolConsumerSettings {
  allowedDsns: readonly Dsn[];
  upstreamOrigin: string | undefined;
  timeoutMs: number;
  maxEnvelopeBytes: number;
  spoolRetrySeconds: number;
  /** The app's own project: drops of a DSN no longer allowed are counted there. */
  ownProject: { dsn: Dsn } | undefined;
}

export interface SpoolConsumerRuntime {
  /** The spool's queue: a retried envelope goes back in as a new message, so no retry spends one of the queue's. */
  queue: { send(message: SpooledEnvelope, options: QueueSendOptions): Promise<unknown> };
  bucket?: R2Bucket;
  /** The same memory of Sentry's rate limits as the live tunnel's. */
  limits: SentryLimits;
  reports?: ClientReports;
  stats?: SpoolStats;
  analytics?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  log?: (line: SpoolLogLine) => void;
  /** A simulated clock and Sentry, for the tests that replay a day. */
  now?: () => number;
  random?: () => number;
  fetch?: typeof fetch;
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
export function createSpoolConsumer(
  settings: SpoolConsumerSettings,
  runtime: SpoolConsumerRuntime,
): (batch: MessageBatch<unknown>) => Promise<void> {
  const consumer: Consumer = {
    ...runtime,
    settings,
    allowList: compileAllowList(settings.allowedDsns, settings.upstreamOrigin),
    log: runtime.log ?? logToConsole,
    now: runtime.now ?? Date.now,
    random: runtime.random ?? Math.random,
  };
  return (batch) => consumeBatch(batch, consumer);
}

/** The consumer's settings and runtime, with the allow-list and the defaults worked out once. */
interface Consumer extends Omit<SpoolConsumerRuntime, "log" | "now" | "random"> {
  settings: SpoolConsumerSettings;
  allowList: DsnAllowList;
  log: (line: SpoolLogLine) => void;
  now: () => number;
  random: () => number;
}

async function consumeBatch(batch: MessageBatch<unknown>, consumer: Consumer): Promise<void> {
  // Bodies in their messages are in memory already: they go to Sentry together, so that a silent
  // Sentry costs the batch one deadline, not one per message. A body from R2 (up to the envelope
  // maximum) is fetched and sent one at a time, so that the batch holds at most one.
  const inR2 = (message: Message<unknown>) => isSpooledEnvelope(message.body) && message.body.key !== undefined;
  await Promise.all(batch.messages.filter((message) => !inR2(message)).map((message) => consumeMessage(message, consumer)));
  for (const message of batch.messages.filter(inR2)) await consumeMessage(message, consumer);
  await consumer.reports?.flush();
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
  recordSettled({ event: "tunnel_spool", ...settled, age_s: Math.round((consumer.now() - receivedAt) / 1000) }, consumer);
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
  const givenUp = async (outcome: SpoolOutcome, stored: Uint8Array | undefined, reason: DiscardReason, countedFor?: string): Promise<Settled> => {
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
  const { limits, now, settings } = consumer;
  const encoding = storedEncoding(envelope);
  const itemTypes = () => (encoding === "identity" ? envelopeItemTypes(stored) : undefined);
  const held = limits.refusal(envelope.dsn, itemTypes, now());
  if (held) return { kind: "rate_limited", status: null, retryAfterSeconds: Number(held["retry-after"]) };

  const body = (await withShiftedSentAt(stored, encoding, waited, settings.maxEnvelopeBytes)) ?? stored;
  const deadline = new Deadline(settings.timeoutMs);
  try {
    const forwarded = await forwardWhole({ url, headers: envelope.headers, body, deadline, fetch: consumer.fetch });
    // A redirect is an answer, not an outage: the tunnel never follows one, now or later.
    if (!forwarded.ok) return forwarded.reason === "upstream_redirect" ? { kind: "refused", status: null } : { kind: "unavailable", status: null };
    const { status, headers } = forwarded.answer;
    limits.record(envelope.dsn, status, headers, now());
    if (status >= 200 && status < 300) return { kind: "delivered", status };
    if (status === 429) {
      const after = limits.refusal(envelope.dsn, itemTypes, now())?.["retry-after"];
      return { kind: "rate_limited", status, retryAfterSeconds: after ? Number(after) : 60 };
    }
    if (status >= 500) return { kind: "unavailable", status };
    return { kind: "refused", status };
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
  if (reason && reports && countedFor) reports.count(countedFor, reason, discardedCategories(plainBody(envelope, stored)));
  message.ack();
}

function recordSettled(line: SpoolLogLine, { log, stats, analytics }: Consumer): void {
  log(line);
  if (stats && line.outcome === "delivered") stats.delivered += 1;
  else if (stats && line.outcome !== "retried" && line.outcome !== "poison") stats.dropped += 1;
  try {
    analytics?.writeDataPoint({ blobs: ["spool", line.outcome, ""], doubles: [0, line.age_s * 1000, line.upstream_status ?? 0], indexes: [""] });
  } catch {
    // As for the live tunnel: the log line has the same facts.
  }
}

export function logToConsole(line: SpoolLogLine): void {
  console.log(JSON.stringify(line));
}
