import { Deadline } from "./deadline.server";
import { envelopeItemTypes } from "./envelope-items.server";
import { forwardEnvelope } from "./forward.server";
import { contentEncodingOf, type ContentEncoding } from "./header-policy.server";
import { withShiftedSentAt } from "./late-delivery.server";
import type { SentryLimits } from "./sentry-limits.server";
import { isSpooledEnvelope, type SpooledEnvelope } from "./spool.server";
import type { SpoolStats } from "./spool-stats.server";
import { UNAVAILABLE_STATUSES, type TunnelSettings } from "./tunnel.server";

/** Relay's own `max_envelope_delay`: an envelope older than this is dropped rather than sent. */
const MAX_ENVELOPE_AGE_MS = 24 * 60 * 60 * 1000;
/** The longest wait between two tries, whatever the attempt. */
const MAX_BACKOFF_SECONDS = 60 * 60;
/** The longest delay a queue message can be retried with. */
const MAX_RETRY_DELAY_SECONDS = 24 * 60 * 60;

/** What happened to one stored envelope, in the spool's log line. */
type SpoolOutcome = "delivered" | "retried" | "dropped" | "expired" | "missing" | "poison";

interface SpoolLogLine {
  event: "tunnel_spool";
  outcome: SpoolOutcome;
  /** Sentry's status, when it answered. */
  upstream_status: number | null;
  attempts: number;
  /** How long the envelope has waited since the tunnel received it. */
  age_s: number;
  /** When retried: the delay asked for. */
  retry_in_s: number | null;
}

interface SpoolConsumerRuntime {
  bucket?: R2Bucket;
  /** The same memory of Sentry's rate limits as the live tunnel's. */
  limits: SentryLimits;
  log?: (line: SpoolLogLine) => void;
  analytics?: Pick<AnalyticsEngineDataset, "writeDataPoint">;
  now?: () => number;
  random?: () => number;
  stats?: SpoolStats;
}

/**
 * The Worker's `queue()` handler for the spool: sends each stored envelope as the live tunnel would
 * have, to the same URL with the same headers. On 2xx it is acknowledged (and its R2 object
 * deleted); on 429 retried when Sentry says; on 5xx or no answer retried with exponential backoff and
 * jitter; on any other 4xx dropped. Older than 24 hours, it is dropped. A message that is not a
 * stored envelope is retried until the queue moves it to the dead-letter queue.
 *
 * Messages are handled one at a time: a body from R2 is held whole (up to the envelope maximum)
 * while its `sent_at` is moved.
 */
export function createSpoolConsumer(
  settings: Pick<TunnelSettings, "timeoutMs" | "maxEnvelopeBytes" | "spoolRetrySeconds">,
  runtime: SpoolConsumerRuntime,
): (batch: MessageBatch<unknown>) => Promise<void> {
  const { bucket, limits, log = logToConsole, analytics, now = Date.now, random = Math.random, stats } = runtime;

  const backoffSeconds = (attempts: number) => {
    const base = Math.min(settings.spoolRetrySeconds * 2 ** Math.max(0, attempts - 1), MAX_BACKOFF_SECONDS);
    return Math.max(1, Math.round(base * (0.5 + random())));
  };

  async function bodyOf(envelope: SpooledEnvelope): Promise<Uint8Array | undefined> {
    if (envelope.body) return envelope.body;
    const object = await bucket?.get(envelope.key!);
    return object ? new Uint8Array(await object.arrayBuffer()) : undefined;
  }

  async function settle(message: Message<unknown>): Promise<Omit<SpoolLogLine, "event" | "attempts" | "age_s">> {
    const envelope = message.body;
    if (!isSpooledEnvelope(envelope)) {
      message.retry();
      return { outcome: "poison", upstream_status: null, retry_in_s: null };
    }
    const forget = async (outcome: SpoolOutcome, status: number | null = null) => {
      if (envelope.key) await bucket?.delete(envelope.key).catch(() => {});
      message.ack();
      return { outcome, upstream_status: status, retry_in_s: null };
    };
    const retry = (asked: number, status: number | null = null) => {
      const seconds = Math.min(asked, MAX_RETRY_DELAY_SECONDS);
      message.retry({ delaySeconds: seconds });
      return { outcome: "retried" as const, upstream_status: status, retry_in_s: seconds };
    };

    const waited = now() - envelope.receivedAt;
    if (waited > MAX_ENVELOPE_AGE_MS) return forget("expired");
    const stored = await bodyOf(envelope);
    if (!stored) return forget("missing");

    const encoding: ContentEncoding = contentEncodingOf(new Headers(envelope.headers)) ?? "identity";
    const itemTypes = () => (encoding === "identity" ? envelopeItemTypes(stored) : undefined);
    const held = limits.refusal(envelope.dsn, itemTypes, now());
    if (held) return retry(Number(held["retry-after"]));

    const shifted = withShiftedSentAt(stored, encoding, waited, settings.maxEnvelopeBytes);
    const body = shifted ?? stored;
    const headers: Record<string, string> = { ...envelope.headers, "content-length": String(body.byteLength) };
    if (shifted) delete headers["content-encoding"];

    const deadline = new Deadline(settings.timeoutMs);
    try {
      const forwarded = await forwardEnvelope({
        url: envelope.url,
        headers,
        consumed: [body as Uint8Array<ArrayBuffer>],
        consumedBytes: body.byteLength,
        rest: undefined,
        contentLength: body.byteLength,
        maxBytes: Number.POSITIVE_INFINITY,
        deadline,
      });
      // A redirect is an answer, not an outage: the tunnel never follows one, now or later.
      if (!forwarded.ok) return forwarded.reason === "upstream_redirect" ? forget("dropped") : retry(backoffSeconds(message.attempts));
      const { status, headers: answered } = forwarded.answer;
      if (status >= 200 && status < 300) return forget("delivered", status);
      if (status === 429) {
        limits.record(envelope.dsn, status, answered, now());
        const after = limits.refusal(envelope.dsn, itemTypes, now())?.["retry-after"];
        return retry(after ? Number(after) : backoffSeconds(message.attempts), status);
      }
      if (UNAVAILABLE_STATUSES.has(status) || status < 400) return retry(backoffSeconds(message.attempts), status);
      return forget("dropped", status);
    } finally {
      deadline.end();
    }
  }

  return async (batch) => {
    for (const message of batch.messages) {
      const receivedAt = isSpooledEnvelope(message.body) ? message.body.receivedAt : now();
      let result: Awaited<ReturnType<typeof settle>>;
      try {
        result = await settle(message);
      } catch {
        // R2 or the queue failed us: try again later, as for an upstream failure.
        const seconds = backoffSeconds(message.attempts);
        message.retry({ delaySeconds: seconds });
        result = { outcome: "retried", upstream_status: null, retry_in_s: seconds };
      }
      const line: SpoolLogLine = {
        event: "tunnel_spool",
        ...result,
        attempts: message.attempts,
        age_s: Math.round((now() - receivedAt) / 1000),
      };
      log(line);
      if (stats && line.outcome === "delivered") stats.delivered += 1;
      else if (stats && line.outcome !== "retried" && line.outcome !== "poison") stats.dropped += 1;
      try {
        analytics?.writeDataPoint({
          blobs: ["spool", line.outcome, ""],
          doubles: [0, line.age_s * 1000, line.upstream_status ?? 0],
          indexes: [""],
        });
      } catch {
        // As for the live tunnel: the log line has the same facts.
      }
    }
  };
}

function logToConsole(line: SpoolLogLine): void {
  console.log(JSON.stringify(line));
}
