import type { ContentEncoding } from "./header-policy.server";

/** An envelope's header is a small JSON object (DSN, ids, trace context): 64 KiB is far past any real one. */
export const MAX_HEADER_LINE_BYTES = 64 * 1024;

const NEWLINE = 0x0a;

/** A chunk of a request body: always backed by a plain ArrayBuffer. */
export type BodyChunk = Uint8Array<ArrayBuffer>;

/**
 * Compressed bytes handed to the decompressor at a time. Deflate expands at most about 1032:1, so
 * one slice inflates to at most some 16.5 KiB, and a bomb gets no further than a few slices ahead
 * of the line scanner before it has looked at the output and said stop.
 */
const INFLATE_SLICE_BYTES = 16;

type HeadFailure =
  | "empty_envelope"
  | "header_too_long"
  | "bad_compression"
  | "header_not_json"
  | "header_repeated_key"
  | "dsn_missing";

export interface EnvelopeHead {
  dsn: string;
  /** The body's bytes read so far, exactly as received (still compressed): they are forwarded first. */
  consumed: BodyChunk[];
  consumedBytes: number;
  /** The whole body is in `consumed`. */
  ended: boolean;
}

export type HeadResult = { ok: true; head: EnvelopeHead } | { ok: false; reason: HeadFailure };

/** Where the body's chunks come from: a stream's reader, or a body already read whole. */
type ChunkSource = Pick<ReadableStreamDefaultReader<BodyChunk>, "read">;

/** A body read whole, offered as one chunk. */
export function wholeBody(bytes: BodyChunk): ChunkSource {
  let given = false;
  return {
    read: async () => {
      if (given || bytes.byteLength === 0) return { done: true, value: undefined };
      given = true;
      return { done: false, value: bytes };
    },
  };
}

/**
 * Reads the body only as far as the end of the envelope's header line. For a compressed body,
 * only that much is decompressed; the compressed bytes read are kept for forwarding.
 *
 * A read error from the body itself (the client went away) is rethrown, not reported as bad input.
 */
export async function readEnvelopeHead(
  reader: ChunkSource,
  encoding: ContentEncoding,
): Promise<HeadResult> {
  const line = new HeaderLineScanner();
  const raw =
    encoding === "identity"
      ? await scanPlain(reader, line)
      : await scanDecompressed(reader, line, encoding);
  const consumedBytes = raw.consumed.reduce((total, chunk) => total + chunk.byteLength, 0);
  if (consumedBytes === 0) return { ok: false, reason: "empty_envelope" };
  if (raw.corrupt) return { ok: false, reason: "bad_compression" };
  if (line.state === "too_long") return { ok: false, reason: "header_too_long" };
  const header = parseHeaderLine(line.bytes());
  if (!header.ok) return header;
  return { ok: true, head: { dsn: header.dsn, consumed: raw.consumed, consumedBytes, ended: raw.ended } };
}

interface RawRead {
  consumed: BodyChunk[];
  ended: boolean;
  /** The compressed data could not be decompressed as far as the end of the line. */
  corrupt?: boolean;
}

async function scanPlain(reader: ChunkSource, line: HeaderLineScanner): Promise<RawRead> {
  const consumed: BodyChunk[] = [];
  while (line.state === "reading") {
    const { done, value } = await reader.read();
    if (done) return { consumed, ended: true };
    consumed.push(value);
    line.push(value);
  }
  return { consumed, ended: false };
}

/**
 * Feeds the compressed chunks through a DecompressionStream until the line is complete, so that
 * only as much is inflated as the line needs.
 *
 * workerd's decompressor inflates whatever it is written at once and buffers the output until it is
 * read, and a pipe writes ahead of the reader; so the compressed bytes go in
 * {@link INFLATE_SLICE_BYTES} at a time, and a new slice only while the scanner is waiting for
 * output, that is, has taken all that was inflated so far. That is what bounds memory.
 *
 * The feeding source never cancels `reader`, never reads from it once scanning stopped, and its read
 * still in flight when scanning stops is awaited, so that every chunk taken from `reader` ends up in
 * `consumed`.
 */
async function scanDecompressed(
  reader: ChunkSource,
  line: HeaderLineScanner,
  format: "gzip" | "deflate",
): Promise<RawRead> {
  const consumed: BodyChunk[] = [];
  let ended = false;
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();
  let clientError: { error: unknown } | undefined;
  let slicing: BodyChunk | undefined;
  let sliced = 0;
  /** The scanner is waiting for output; `asked` settles when it next is. */
  let waiting = false;
  let ask = () => {};
  let asked = new Promise<void>((resolve) => (ask = resolve));

  const nextSlice = (controller: ReadableStreamDefaultController<BufferSource>) => {
    const chunk = slicing!;
    const end = Math.min(sliced + INFLATE_SLICE_BYTES, chunk.byteLength);
    controller.enqueue(chunk.subarray(sliced, end));
    sliced = end;
    if (sliced >= chunk.byteLength) slicing = undefined;
  };

  const feed = (controller: ReadableStreamDefaultController<BufferSource>): Promise<void> | void => {
    if (stopped) return;
    if (slicing) return nextSlice(controller);
    inFlight = reader.read().then(
      ({ done, value }) => {
        if (done) {
          ended = true;
          if (!stopped) controller.close();
        } else {
          consumed.push(value);
          if (stopped) return;
          // Even an empty chunk is passed on: a pull that enqueues nothing is not called again.
          slicing = value;
          sliced = 0;
          nextSlice(controller);
        }
      },
      (error: unknown) => {
        clientError = { error };
        if (!stopped) controller.error(error);
      },
    );
    return inFlight;
  };

  const compressed = new ReadableStream<BufferSource>(
    { pull: (controller) => (waiting ? feed(controller) : asked.then(() => feed(controller))) },
    { highWaterMark: 0 },
  );

  const decompressed = compressed.pipeThrough(new DecompressionStream(format)).getReader();
  let corrupt = false;
  try {
    while (line.state === "reading") {
      const output = decompressed.read();
      waiting = true;
      ask();
      const { done, value } = await output;
      waiting = false;
      asked = new Promise<void>((resolve) => (ask = resolve));
      if (done) break;
      line.push(value);
    }
  } catch {
    corrupt = true;
  } finally {
    stopped = true;
    ask();
    decompressed.cancel().catch(() => {});
    await inFlight;
  }
  if (clientError) throw clientError.error;
  return { consumed, ended, corrupt };
}

/** Collects the bytes before the first newline, up to {@link MAX_HEADER_LINE_BYTES}. */
class HeaderLineScanner {
  state: "reading" | "complete" | "too_long" = "reading";
  private readonly parts: Uint8Array[] = [];
  private length = 0;

  push(chunk: Uint8Array): void {
    if (this.state !== "reading") return;
    const newline = chunk.indexOf(NEWLINE);
    const part = newline === -1 ? chunk : chunk.subarray(0, newline);
    if (this.length + part.byteLength > MAX_HEADER_LINE_BYTES) {
      this.state = "too_long";
      return;
    }
    this.parts.push(part);
    this.length += part.byteLength;
    if (newline !== -1) this.state = "complete";
  }

  /** The line so far; at the end of the body, the end of the body ends it too. */
  bytes(): Uint8Array {
    const line = new Uint8Array(this.length);
    let offset = 0;
    for (const part of this.parts) {
      line.set(part, offset);
      offset += part.byteLength;
    }
    return line;
  }
}

const utf8 = new TextDecoder();

function parseHeaderLine(
  line: Uint8Array,
): { ok: true; dsn: string } | { ok: false; reason: "header_not_json" | "header_repeated_key" | "dsn_missing" } {
  const text = utf8.decode(line);
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch {
    return { ok: false, reason: "header_not_json" };
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    return { ok: false, reason: "header_not_json" };
  }
  // JSON.parse keeps the last of two "dsn" keys, another reader may keep the first: the DSN checked
  // here must be the only one Sentry can see.
  if (repeatsAKey(text)) return { ok: false, reason: "header_repeated_key" };
  const dsn: unknown = (header as Record<string, unknown>).dsn;
  return typeof dsn === "string" ? { ok: true, dsn } : { ok: false, reason: "dsn_missing" };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether any object in `json`, which JSON.parse has already accepted, names one key twice. */
function repeatsAKey(json: string): boolean {
  // One entry per open object or array: the keys seen so far, or null for an array.
  const open: (Set<string> | null)[] = [];
  let atKey = false;
  for (let index = 0; index < json.length; index += 1) {
    const code = json.charCodeAt(index);
    if (code === QUOTE) {
      const start = index;
      let escaped = false;
      for (index += 1; json.charCodeAt(index) !== QUOTE; index += 1) {
        if (json.charCodeAt(index) === BACKSLASH) {
          escaped = true;
          index += 1;
        }
      }
      if (atKey) {
        const key = escaped ? (JSON.parse(json.slice(start, index + 1)) as string) : json.slice(start + 1, index);
        const keys = open[open.length - 1]!;
        if (keys.has(key)) return true;
        keys.add(key);
        atKey = false;
      }
    } else if (code === 0x7b /* { */) {
      open.push(new Set());
      atKey = true;
    } else if (code === 0x5b /* [ */) {
      open.push(null);
    } else if (code === 0x7d /* } */ || code === 0x5d /* ] */) {
      open.pop();
    } else if (code === 0x2c /* , */) {
      atKey = open[open.length - 1] !== null;
    }
  }
  return false;
}

/** The chunks as one: the only chunk itself, or a copy of all of them. */
export function joinChunks(chunks: readonly BodyChunk[], length: number): BodyChunk {
  if (chunks.length === 1) return chunks[0]!;
  const whole = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    whole.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return whole;
}
