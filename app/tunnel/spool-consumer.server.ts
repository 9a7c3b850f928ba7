import type { ClientReports, DiscardReason } from "./client-reports.server";
import { discardedCategories } from "./client-reports.server";
import { Deadline } from "./deadline.server";
import type { Dsn } from "./dsn.server";
import { compileAllowList } from "./dsn-policy.server";
import type { BodyChunk } from "./envelope-head.server";
import { envelopeItemTypes } from "./envelope-items.server";
import { forwardWhole } from "./forward.server";
import { contentEncodingOf, type ContentEncoding } from "./header-policy.server";
import { withShiftedSentAt } from "./late-delivery.server";
import type { SentryLimits } from "./sentry-limits.server";
import { decideAfterAttempt, MAX_ENVELOPE_AGE_MS, type AttemptResult, type SpoolVerdict } from "./spool-decision.server";
import { isSpooledEnvelope, type SpooledEnvelope } from "./spool.server";
import type { SpoolStats } from "./spool-stats.server";

/** The spool's dead-letter queue, as `wrangler.toml` names it: its batches go to {@link createDeadLetterConsumer}. */
export const DEAD_LETTER_QUEUE = "tunnel-spool-dead";

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

interface SpoolLogLine {
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

interface SpoolConsumerRuntime {
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
  const { queue, bucket, limits, reports, stats, analytics, log = logToConsole, now = Date.now, random = Math.random, fetch } = runtime;
  const allowList = compileAllowList(settings.allowedDsns, settings.upstreamOrigin);

  async function bodyOf(envelope: SpooledEnvelope): Promise<BodyChunk | undefined> {
    if (envelope.body) return envelope.body as BodyChunk;
    const object = await bucket?.get(envelope.key!);
    return object ? new Uint8Array(await object.arrayBuffer()) : undefined;
  }

  /** Gives the envelope up: its R2 object deleted, its items counted for Sentry, the message acknowledged. */
  async function giveUp(
    message: Message<unknown>,
    envelope: SpooledEnvelope,
    stored: Uint8Array | undefined,
    reason: DiscardReason | undefined,
    countedFor: string | undefined = envelope.dsn,
  ): Promise<void> {
    if (envelope.key) await bucket?.delete(envelope.key);
    if (reason && reports && countedFor) reports.count(countedFor, reason, discardedCategories(plainBody(envelope, stored)));
    message.ack();
  }

  async function attempt(envelope: SpooledEnvelope, url: string, stored: BodyChunk, waited: number): Promise<AttemptResult> {
    const encoding = storedEncoding(envelope);
    const itemTypes = () => (encoding === "identity" ? envelopeItemTypes(stored) : undefined);
    const held = limits.refusal(envelope.dsn, itemTypes, now());
    if (held) return { kind: "rate_limited", status: null, retryAfterSeconds: Number(held["retry-after"]) };

    const body = (await withShiftedSentAt(stored, encoding, waited, settings.maxEnvelopeBytes)) ?? stored;
    const deadline = new Deadline(settings.timeoutMs);
    try {
      const forwarded = await forwardWhole({ url, headers: envelope.headers, body, deadline, fetch });
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

  async function apply(message: Message<unknown>, envelope: SpooledEnvelope, stored: Uint8Array, verdict: SpoolVerdict, status: number | null): Promise<Settled> {
    const tries = verdict.action === "retry" ? verdict.tries : (envelope.tries ?? 0);
    if (verdict.action === "retry") {
      // Sent again before the old one is acknowledged: a failure in between can only duplicate it.
      await queue.send({ ...envelope, tries: verdict.tries }, { contentType: "v8", delaySeconds: verdict.delaySeconds });
      message.ack();
      return { outcome: "retried", upstream_status: status, tries, retry_in_s: verdict.delaySeconds };
    }
    await giveUp(message, envelope, stored, verdict.action === "drop" ? verdict.discard : undefined);
    return { outcome: verdict.outcome, upstream_status: status, tries, retry_in_s: null };
  }

  async function settle(message: Message<unknown>): Promise<Settled> {
    const envelope = message.body;
    if (!isSpooledEnvelope(envelope)) {
      // Not ours to deliver and not ours to read: acknowledged and logged, never retried.
      message.ack();
      return { outcome: "poison", upstream_status: null, tries: 0, retry_in_s: null };
    }
    const tries = envelope.tries ?? 0;
    const waited = now() - envelope.receivedAt;
    const allowed = allowList.get(envelope.dsn);
    if (!allowed) {
      // Taken off the allow-list since it was stored: not sent, and counted in the app's own project.
      await giveUp(message, envelope, envelope.body, "send_error", settings.ownProject?.dsn.text);
      return { outcome: "not_allowed", upstream_status: null, tries, retry_in_s: null };
    }
    if (waited > MAX_ENVELOPE_AGE_MS) {
      await giveUp(message, envelope, envelope.body, "network_error");
      return { outcome: "expired", upstream_status: null, tries, retry_in_s: null };
    }
    const stored = await bodyOf(envelope);
    if (!stored) {
      await giveUp(message, envelope, undefined, "internal_sdk_error");
      return { outcome: "missing", upstream_status: null, tries, retry_in_s: null };
    }
    const result = await attempt(envelope, allowed.upstreamUrl, stored, waited);
    const verdict = decideAfterAttempt(result, tries, waited, settings, random);
    return apply(message, envelope, stored, verdict, result.status);
  }

  async function handle(message: Message<unknown>): Promise<void> {
    const receivedAt = isSpooledEnvelope(message.body) ? message.body.receivedAt : now();
    let settled: Settled;
    try {
      settled = await settle(message);
    } catch {
      // R2 or the queue failed us: the queue tries the message again, and after its
      // max_retries hands it to the dead-letter queue, whose handler gives it up cleanly.
      message.retry({ delaySeconds: 10 });
      settled = { outcome: "retried", upstream_status: null, tries: 0, retry_in_s: 10 };
    }
    record({ event: "tunnel_spool", ...settled, age_s: Math.round((now() - receivedAt) / 1000) });
  }

  return async (batch) => {
    // Bodies in their messages are in memory already: they go to Sentry together, so that a silent
    // Sentry costs the batch one deadline, not one per message. A body from R2 (up to the envelope
    // maximum) is fetched and sent one at a time, so that the batch holds at most one.
    const inR2 = (message: Message<unknown>) => isSpooledEnvelope(message.body) && message.body.key !== undefined;
    await Promise.all(batch.messages.filter((message) => !inR2(message)).map(handle));
    for (const message of batch.messages.filter(inR2)) await handle(message);
    await reports?.flush();
  };

  function record(line: SpoolLogLine): void {
    log(line);
    if (stats && line.outcome === "delivered") stats.delivered += 1;
    else if (stats && line.outcome !== "retried" && line.outcome !== "poison") stats.dropped += 1;
    try {
      analytics?.writeDataPoint({ blobs: ["spool", line.outcome, ""], doubles: [0, line.age_s * 1000, line.upstream_status ?? 0], indexes: [""] });
    } catch {
      // As for the live tunnel: the log line has the same facts.
    }
  }
}

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

function storedEncoding(envelope: SpooledEnvelope): ContentEncoding {
  return contentEncodingOf(new Headers(envelope.headers)) ?? "identity";
}

/** The stored body when its items can be read as it is (not compressed), for counting them. */
function plainBody(envelope: SpooledEnvelope, stored: Uint8Array | undefined): Uint8Array | undefined {
  return stored && storedEncoding(envelope) === "identity" ? stored : undefined;
}

function logToConsole(line: SpoolLogLine): void {
  console.log(JSON.stringify(line));
}
