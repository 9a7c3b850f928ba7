import { joinChunks, readByScript, type BodyChunk } from "../shared/body.ts";

/**
 * The memory one tunnel holds (per isolate: a tunnel is built once in each) of large bodies while
 * they go to Sentry, so that a body Sentry fails under can still be stored: one of declared length
 * read whole ({@link readInHand}), one of unknown length teed as it streams. Every byte held is
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
  /** Every declared byte came and is held: the body can go to Sentry whole, and be stored whole. */
  whole: boolean;
  /** Gives back what was reserved: once the request is answered. */
  release: () => void;
}

/** {@link readInHand} over one tunnel's budget: what the spool gives the receiving stage. */
export type ReadRest = (body: ReadableStream<BodyChunk>, from: number, length: number, race: <T>(read: Promise<T>) => Promise<T>) => Promise<HeldRest | undefined>;

/**
 * The rest of a body of declared `length`, of which `from` bytes are already read, read into
 * memory a slice at a time, each reserved in `budget` before it is read (decision 043): what a body
 * holds follows the bytes that came, so a client that declares 16 MiB and sends nothing holds
 * nothing, and one that stalls holds what it sent and one slice more. A request's own body, a byte
 * stream, is read natively, a slice a call; one a script made, a chunk a call. Where the budget has
 * no more room the read stops, not whole, and the rest streams as it comes; a body over the ceiling
 * is not read here at all (`undefined`). Each read is bounded by `race`; when one fails, the
 * reservation is given back and the error rethrown.
 */
export async function readInHand(
  budget: InHandBudget,
  body: ReadableStream<BodyChunk>,
  from: number,
  length: number,
  race: <T>(read: Promise<T>) => Promise<T>,
): Promise<HeldRest | undefined> {
  if (length > budget.ceiling) return undefined;
  let reserved = 0;
  const release = () => {
    budget.release(reserved);
    reserved = 0;
  };
  const reader = sliceReaderOf(body);
  const chunks: BodyChunk[] = [];
  let bytes = from;
  try {
    while (bytes < length) {
      const until = Math.min(bytes + IN_HAND_SLICE_BYTES, length);
      if (until > reserved && !budget.reserve(until - reserved)) break;
      reserved = Math.max(reserved, until);
      const { done, value } = await race(reader.read(until - bytes));
      if (done) break;
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
  return { chunks, whole: bytes === length, release };
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

/** A copy of a body taken while it streams to Sentry. */
export interface InHand {
  /** The whole body once it has come; `undefined` when it outgrew the ceiling or the budget, or failed. */
  body(): Promise<BodyChunk | undefined>;
  /** Whether it was not held for want of memory: the ceiling or the budget; not the client's failure. */
  outgrew(): boolean;
  /** Gives its memory back: once Sentry has taken the body, or it has been stored. */
  release(): void;
}

/** A body that could not be held, for want of memory: lost if Sentry fails under it, and said so. */
export const NOT_HELD: InHand = { body: async () => undefined, outgrew: () => true, release: () => {} };

/**
 * The rest of a body of unknown length, teed: one branch for Sentry, and one read here into memory
 * within `budget`, reserved as it grows, a chunk at a time. The copy is read on its own, not as
 * fast as Sentry takes the other: a Sentry that fails before the body's end leaves the copy to
 * finish. The parts are joined only when the copy is stored. No body over `ceiling` is held: the
 * budget's, or less where the spool could store no more.
 */
export function keepInHand(consumed: readonly BodyChunk[], rest: ReadableStream<BodyChunk>, budget: InHandBudget, ceiling = budget.ceiling): { toSentry: ReadableStream<BodyChunk>; inHand: InHand } {
  const consumedBytes = consumed.reduce((total, chunk) => total + chunk.byteLength, 0);
  let reserved = consumedBytes;
  if (reserved > ceiling || !budget.reserve(reserved)) return { toSentry: rest, inHand: NOT_HELD };
  const [branch, toHand] = rest.tee();
  let released = false;
  let outgrew = false;
  const release = () => {
    if (released) return;
    released = true;
    budget.release(reserved);
    toHand.cancel().catch(() => {});
  };
  /** Grows the reservation to hold `restBytes` after what was read; `false` when that does not fit, or the copy was let go. */
  const grow = (restBytes: number) => {
    const length = consumedBytes + restBytes;
    if (released) return false;
    if (length <= reserved) return true;
    outgrew = length > ceiling || !budget.reserve(length - reserved);
    if (outgrew) return false;
    reserved = length;
    return true;
  };
  const parts = readGrowing(toHand, grow).then(
    (read) => {
      if (read && !released) return [...consumed, ...read];
      release();
      return undefined;
    },
    () => {
      // The client's body failed: Sentry's branch fails with it.
      release();
      return undefined;
    },
  );
  const body = async () => {
    const read = await parts;
    return read && joinChunks(read, read.reduce((total, chunk) => total + chunk.byteLength, 0));
  };
  // workerd pipes no tee's branch of a body the script made into the forward's `FixedLengthStream`.
  return { toSentry: readByScript(branch), inHand: { body, outgrew: () => outgrew, release } };
}

/** A branch of unknown length, a chunk at a time, each reserved before it is kept. */
async function readGrowing(branch: ReadableStream<BodyChunk>, grow: (length: number) => boolean): Promise<BodyChunk[] | undefined> {
  const reader = branch.getReader();
  const chunks: BodyChunk[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    length += value.byteLength;
    if (!grow(length)) {
      reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
}
