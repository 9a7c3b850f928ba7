import { contentEncodingOf, type ContentEncoding } from "../request/content-encoding.ts";

/**
 * The spool: envelopes whose fate was `unavailable` (Sentry unreachable, too slow, or a 5xx) are
 * stored in a Cloudflare Queue and sent again by the Worker's own `queue()` consumer. A body that
 * does not fit in a queue message goes to R2, and the message carries its key.
 */

/** One stored envelope: everything its later forward needs, as the live forward would have sent it. */
export interface SpooledEnvelope {
  /**
   * Retired, in two steps (decision 018): nothing reads it, as the consumer sends to the allow-list's
   * URL for the DSN. Step one, now: readers no longer require it, and it is still written, for a
   * Worker of the version before, which requires it, may still consume what this one stores (during
   * a deploy, or after a rollback). Step two, once no message written before step one can be left
   * (a day) and no rollback below it is wanted: writers stop, and the field goes.
   */
  url?: string;
  /** The forward's headers (type, encoding, length, the client's identity). */
  headers: Record<string, string>;
  /** The envelope's DSN, for Sentry's rate limits remembered at the edge. */
  dsn: string;
  /** When the tunnel received it, in ms since the epoch. */
  receivedAt: number;
  /** Sentry's failures to take it so far; absent until the first. */
  tries?: number;
  /** The body, when it fits in the message … */
  body?: Uint8Array | undefined;
  /** … or the R2 key it is stored under. */
  key?: string;
}

/** A queue message is at most 128 KB, with some 100 bytes of the queue's own metadata. */
const MESSAGE_LIMIT_BYTES = 128_000;
/** Room for the structured-clone framing and the queue's metadata. */
const MESSAGE_SLACK_BYTES = 1_024;

/** What the spool needs of a Queue binding: to send a message to it. */
export interface SpoolQueue {
  send(message: SpooledEnvelope, options?: QueueSendOptions): Promise<unknown>;
}

interface SpoolBindings {
  queue: SpoolQueue;
  /** Without it, only bodies that fit in a message can be stored. */
  bucket?: R2Bucket | undefined;
}

/**
 * A body to store: bytes held in memory, or a stream of known length (R2 takes no other), such as
 * a `FixedLengthStream`'s readable side.
 */
export type SpoolBody = Uint8Array | { stream: ReadableStream<Uint8Array>; length: number };

export interface Spool {
  /** Whether a body of `length` bytes can be stored at all: in a message, or with a bucket bound. */
  accepts(envelope: Omit<SpooledEnvelope, "body" | "key">, length: number): boolean;
  /** Resolves `true` once the envelope is stored; `false` when it could not be. Never rejects. */
  store(envelope: Omit<SpooledEnvelope, "body" | "key">, body: SpoolBody): Promise<boolean>;
}

/** Where nothing is stored: the tunnel without a spool bound, whose envelopes fail as Sentry did. */
export const NO_SPOOL: Spool = { accepts: () => false, store: async () => false };

export function createSpool({ queue, bucket }: SpoolBindings): Spool {
  const fitsInMessage = (envelope: Omit<SpooledEnvelope, "body" | "key">, length: number) =>
    length + JSON.stringify(envelope).length + MESSAGE_SLACK_BYTES <= MESSAGE_LIMIT_BYTES;
  return {
    accepts: (envelope, length) => bucket !== undefined || fitsInMessage(envelope, length),
    async store(envelope, body) {
      try {
        const length = body instanceof Uint8Array ? body.byteLength : body.length;
        if (fitsInMessage(envelope, length)) {
          // Small enough for the message itself; a stream this short is read whole first.
          const bytes = body instanceof Uint8Array ? body : new Uint8Array(await new Response(body.stream).arrayBuffer());
          await queue.send({ ...envelope, body: bytes }, { contentType: "v8" });
          return true;
        }
        if (!bucket) return false;
        const key = `spool/${new Date(envelope.receivedAt).toISOString().slice(0, 10)}/${crypto.randomUUID()}`;
        await bucket.put(key, body instanceof Uint8Array ? body : body.stream);
        try {
          await queue.send({ ...envelope, key }, { contentType: "v8" });
        } catch (error) {
          await bucket.delete(key).catch(() => {});
          throw error;
        }
        return true;
      } catch {
        return false;
      }
    },
  };
}

/** A message body from the queue that is a {@link SpooledEnvelope}, rather than something else. */
export function isSpooledEnvelope(value: unknown): value is SpooledEnvelope {
  if (typeof value !== "object" || value === null) return false;
  const { headers, dsn, receivedAt, body, key, tries } = value as Record<string, unknown>;
  return (
    (tries === undefined || (typeof tries === "number" && Number.isSafeInteger(tries) && tries >= 0)) &&
    typeof headers === "object" &&
    headers !== null &&
    typeof dsn === "string" &&
    typeof receivedAt === "number" &&
    (body instanceof Uint8Array || typeof key === "string")
  );
}

export function storedEncoding(envelope: SpooledEnvelope): ContentEncoding {
  return contentEncodingOf(new Headers(envelope.headers)) ?? "identity";
}

/** The stored body when its items can be read as it is (not compressed), for counting them. */
export function plainBody(envelope: SpooledEnvelope, stored: Uint8Array | undefined): Uint8Array | undefined {
  return stored && storedEncoding(envelope) === "identity" ? stored : undefined;
}
