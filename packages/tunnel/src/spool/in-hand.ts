import type { BodyChunk } from "../shared/body.ts";

/**
 * The memory one tunnel holds (per isolate: a tunnel is built once in each) of large bodies while
 * they go to Sentry, so that a body Sentry fails under can still be stored: read whole before it
 * goes ({@link readInHand}), whether its length was declared or not. Every byte held is
 * reserved here as it comes, never from a length a client declared; a body over half of it is not
 * held at all, so that two can always be at once.
 */
export class InHandBudget {
  readonly bytes: number;
  /** The largest body held. */
  readonly ceiling: number;
  #free: number;

  constructor(bytes: number) {
    this.bytes = bytes;
    this.ceiling = Math.floor(bytes / 2);
    this.#free = bytes;
  }

  /** Takes `bytes` from the budget, or nothing when they are not free or over the ceiling. */
  reserve(bytes: number): boolean {
    if (bytes > this.ceiling || bytes > this.#free) return false;
    this.#free -= bytes;
    return true;
  }

  release(bytes: number): void {
    this.#free += bytes;
  }
}

/** What a body of declared length holds ahead of the bytes that came: all a stalled client pins. */
const IN_HAND_SLICE_BYTES = 256 * 1024;

/** The rest of a body read in hand: its chunks, whether they end it, and what gives their memory back. */
export interface HeldRest {
  chunks: BodyChunk[];
  /** The body came to its end and is held: it can go to Sentry whole, and be stored whole. */
  whole: boolean;
  /** Gives back what was reserved: once the request is answered. */
  release: () => void;
}

/** {@link readInHand} over one tunnel's budget: what the spool gives the receiving stage. */
export type ReadRest = (
  body: ReadableStream<BodyChunk>,
  from: number,
  length: number | undefined,
  maxBytes: number,
  race: <T>(read: Promise<T>) => Promise<T>,
) => Promise<HeldRest | undefined>;

/**
 * The rest of a body of which `from` bytes are already read, read into memory a slice at a time,
 * each reserved in `budget` before it is read (decision 043): what a body holds follows the bytes
 * that came, so a client that declares 16 MiB and sends nothing holds nothing, and one that stalls
 * holds what it sent and one slice more. A body of declared `length` over the ceiling is not read
 * here at all (`undefined`); one of unknown length (sent chunked) is read until it ends or passes
 * the ceiling or `maxBytes`, the envelope's maximum. Where the budget has no more room the read stops, not whole, and the rest streams
 * to Sentry as it comes, not held. A request's own body, a byte stream, is read natively, a slice a
 * call; one a script made, a chunk a call. Each read is bounded by `race`; when one fails, the
 * reservation is given back and the error rethrown.
 */
export async function readInHand(
  budget: InHandBudget,
  body: ReadableStream<BodyChunk>,
  from: number,
  length: number | undefined,
  maxBytes: number,
  race: <T>(read: Promise<T>) => Promise<T>,
): Promise<HeldRest | undefined> {
  if (length !== undefined && length > budget.ceiling) return undefined;
  const end = length ?? Math.min(budget.ceiling, maxBytes) + 1;
  let reserved = 0;
  const release = () => {
    budget.release(reserved);
    reserved = 0;
  };
  const reader = sliceReaderOf(body);
  const chunks: BodyChunk[] = [];
  let bytes = from;
  let ended = false;
  try {
    while (bytes < end) {
      const until = Math.min(bytes + IN_HAND_SLICE_BYTES, end);
      if (until > reserved && !budget.reserve(until - reserved)) break;
      reserved = Math.max(reserved, until);
      const { done, value } = await race(reader.read(until - bytes));
      if (done) {
        ended = true;
        break;
      }
      chunks.push(value as BodyChunk);
      bytes += value.byteLength;
      // A script's chunk may be larger than the slice reserved for it.
      if (bytes > reserved && !budget.reserve(bytes - reserved)) break;
      reserved = Math.max(reserved, bytes);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    release();
    throw error;
  }
  reader.releaseLock();
  return { chunks, whole: length === undefined ? ended : bytes === length, release };
}

/** workerd's BYOB reader, whose `readAtLeast` fills a buffer of ours in one call (the DOM's typings lack it). */
type WorkerdByteReader = { readAtLeast<View extends ArrayBufferView>(min: number, view: View): Promise<ReadableStreamReadResult<View>> };

/** A reader of `bytes` at a time: in one native call where the stream is a byte stream, else a chunk at a time. */
function sliceReaderOf(body: ReadableStream<BodyChunk>): Pick<ReadableStreamDefaultReader, "cancel" | "releaseLock"> & {
  read(bytes: number): Promise<ReadableStreamReadResult<Uint8Array>>;
} {
  let byteReader: ReadableStreamBYOBReader & WorkerdByteReader;
  try {
    byteReader = body.getReader({ mode: "byob" }) as typeof byteReader;
  } catch {
    const reader = body.getReader();
    return { read: () => reader.read(), cancel: (reason) => reader.cancel(reason), releaseLock: () => reader.releaseLock() };
  }
  return { read: (bytes) => byteReader.readAtLeast(bytes, new Uint8Array(bytes)), cancel: (reason) => byteReader.cancel(reason), releaseLock: () => byteReader.releaseLock() };
}
