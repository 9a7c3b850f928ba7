import { contentEncodingOf, type ContentEncoding } from "../request/content-encoding.ts";
import { Inflater } from "../envelope/inflate.ts";
import { joinChunks, wholeBody, type BodyChunk } from "../shared/body.ts";
import { callBinding, type Within } from "./binding-call.ts";
import type { MeasurableQueue } from "./heartbeat.ts";

/**
 * The spool: envelopes whose fate was `unavailable` (Sentry unreachable, too slow, or a 5xx) are
 * stored in a Cloudflare Queue and sent again by the Worker's own `queue()` consumer. A body that
 * does not fit in a queue message goes to R2, and the message carries its key.
 */

/** One stored envelope: everything its later forward needs, as the live forward would have sent it. */
export interface SpooledEnvelope {
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
  /**
   * The spool gzipped the client's uncompressed body to store it, and `headers` say `gzip` (so a
   * consumer of a version before, which does not know this field, sends it as gzip, which Sentry
   * takes); this version's consumer inflates it and sends the client's bytes.
   */
  // Decision 029.
  packed?: "gzip";
}

/** What is stored of an envelope besides its body: the facts its later forward needs. */
export type EnvelopeFacts = Omit<SpooledEnvelope, "body" | "key">;

/** Packing must save at least this share of a body to be worth the consumer's inflating. */
const PACKING_WORTH = 0.9;

/**
 * The envelope as it is best stored: an uncompressed body gzipped when that saves a tenth or
 * more. The queue's backlog is bounded in bytes (25 GB), and the JSON of events packs to a
 * fraction of its size; an attachment already compressed is stored as it came.
 */
async function packedForStorage(envelope: EnvelopeFacts, body: Uint8Array): Promise<{ envelope: EnvelopeFacts; body: Uint8Array }> {
  if (storedEncoding(envelope as SpooledEnvelope) !== "identity") return { envelope, body };
  const gzipped = new Uint8Array(await new Response(new Blob([body as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
  if (gzipped.byteLength > body.byteLength * PACKING_WORTH) return { envelope, body };
  const headers = { ...envelope.headers, "content-encoding": "gzip", "content-length": String(gzipped.byteLength) };
  return { envelope: { ...envelope, headers, packed: "gzip" }, body: gzipped };
}

/**
 * What the consumer sends: the body and headers as the client's were, a packed body inflated (at
 * most `maxBytes`); `undefined` when a packed body does not inflate within that.
 */
export async function unpacked(envelope: SpooledEnvelope, stored: Uint8Array, maxBytes: number): Promise<{ body: BodyChunk; headers: Record<string, string> } | undefined> {
  if (envelope.packed !== "gzip") return { body: stored as BodyChunk, headers: envelope.headers };
  // The bounded inflater the envelope's head reader and the `sent_at` shift use.
  const inflater = new Inflater(wholeBody(stored as BodyChunk), "gzip", INFLATE_SLICE_BYTES);
  const chunks: BodyChunk[] = [];
  let length = 0;
  try {
    for (let read = await inflater.read(); !read.done; read = await inflater.read()) {
      length += read.value.byteLength;
      if (length > maxBytes) return undefined;
      chunks.push(read.value);
    }
  } catch {
    return undefined;
  } finally {
    await inflater.stop().catch(() => {});
  }
  const { "content-encoding": _packed, ...headers } = envelope.headers;
  return { body: joinChunks(chunks, length), headers: { ...headers, "content-length": String(length) } };
}

/** Packed bytes handed to the inflater at a time, as the `sent_at` shift hands them. */
const INFLATE_SLICE_BYTES = 4 * 1024;

/** A queue message is at most 128 KB, with some 100 bytes of the queue's own metadata. */
const MESSAGE_LIMIT_BYTES = 128_000;
/** Room for the structured-clone framing and the queue's metadata. */
const MESSAGE_SLACK_BYTES = 1_024;
/** A stored body larger than this goes to R2 when a bucket is bound: half a queue operation (64 KB). */
const IN_MESSAGE_BYTES = 32 * 1024;

/** What the spool needs of a Queue binding: to send a message to it. */
export interface SpoolQueue extends MeasurableQueue {
  send(message: SpooledEnvelope, options?: QueueSendOptions): Promise<unknown>;
}

interface SpoolBindings {
  queue: SpoolQueue;
  /** Without it, only bodies that fit in a message can be stored. */
  bucket?: R2Bucket | undefined;
  /** What the operator calls each binding, for the line of an envelope it failed. */
  names: { queue: string; bucket: string };
}

/**
 * A body to store: bytes held in memory, or a stream of known length (R2 takes no other), such as
 * a `FixedLengthStream`'s readable side.
 */
export type SpoolBody = Uint8Array | { stream: ReadableStream<Uint8Array>; length: number };

/** An envelope as it is to be stored, with its body. */
export interface ToStore {
  envelope: EnvelopeFacts;
  body: SpoolBody;
}

export interface Spool {
  /**
   * The envelope as it would be stored: a body in memory packed when that pays (a stream is stored
   * as it comes). The byte budgets count what this gives, the bytes that are kept.
   */
  pack(envelope: EnvelopeFacts, body: SpoolBody): Promise<ToStore>;
  /** The largest body it can store of this envelope at all: what a message holds beside it, or, with a bucket bound, any. */
  room(envelope: EnvelopeFacts): number;
  /**
   * Resolves once the envelope is stored, due to the consumer after `delaySeconds`, each binding's
   * call `within` the request's bound; rejects with a `BindingFailed` naming the binding that failed
   * or did not answer. Only a body within {@link room} is given.
   */
  store(envelope: EnvelopeFacts, body: SpoolBody, within: Within, delaySeconds?: number): Promise<void>;
}

export function createSpool({ queue, bucket, names }: SpoolBindings): Spool {
  const messageRoom = (envelope: EnvelopeFacts) => MESSAGE_LIMIT_BYTES - JSON.stringify(envelope).length - MESSAGE_SLACK_BYTES;
  const room = (envelope: EnvelopeFacts) => (bucket ? Number.POSITIVE_INFINITY : messageRoom(envelope));
  return {
    async pack(envelope, body) {
      if (!(body instanceof Uint8Array)) return { envelope, body };
      try {
        return await packedForStorage(envelope, body);
      } catch {
        return { envelope, body };
      }
    },
    room,
    async store(envelope, body, within, delaySeconds = 0) {
      const length = body instanceof Uint8Array ? body.byteLength : body.length;
      const send = (message: SpooledEnvelope) => callBinding(names.queue, () => queue.send(message, { contentType: "v8", delaySeconds }), within);
      // What is large even packed (an attachment, a replay) waits in R2 when a bucket is bound,
      // where the queue's backlog does not count it and a wait reads a small message, not the body.
      if (!bucket || (length <= messageRoom(envelope) && length <= IN_MESSAGE_BYTES)) {
        // A stream this short is read whole first.
        const bytes = body instanceof Uint8Array ? body : new Uint8Array(await callBinding(names.queue, () => new Response(body.stream).arrayBuffer(), within));
        return void (await send({ ...envelope, body: bytes }));
      }
      const key = `spool/${new Date(envelope.receivedAt).toISOString().slice(0, 10)}/${crypto.randomUUID()}`;
      const putting = bucket.put(key, body instanceof Uint8Array ? body : body.stream);
      try {
        await callBinding(names.bucket, () => putting, within);
        await send({ ...envelope, key });
      } catch (error) {
        // Not to be left in R2 without a message that names it: deleted now, or once a late put lands.
        putting.then(() => bucket.delete(key)).catch(() => {});
        throw error;
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

/** The stored body when its items can be read as it is (not compressed, nor packed), for counting them. */
export function plainBody(envelope: SpooledEnvelope, stored: Uint8Array | undefined): Uint8Array | undefined {
  return stored && storedEncoding(envelope) === "identity" ? stored : undefined;
}
