import type { ContentEncoding } from "./header-policy.server";

/** An envelope's header is a small JSON object (DSN, ids, trace context): 64 KiB is far past any real one. */
export const MAX_HEADER_LINE_BYTES = 64 * 1024;

const NEWLINE = 0x0a;

/** A chunk of a request body: always backed by a plain ArrayBuffer. */
export type BodyChunk = Uint8Array<ArrayBuffer>;

export type HeadFailure = "empty_envelope" | "header_too_long" | "bad_compression" | "header_not_json" | "dsn_missing";

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
export type ChunkSource = Pick<ReadableStreamDefaultReader<BodyChunk>, "read">;

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
 * Feeds the compressed chunks through a DecompressionStream until the line is complete. The
 * feeding source never cancels `reader`, and its read still in flight when scanning stops is
 * awaited, so that every chunk taken from `reader` ends up in `consumed`.
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

  const compressed = new ReadableStream<BufferSource>(
    {
      pull(controller) {
        inFlight = reader.read().then(
          ({ done, value }) => {
            if (done) {
              ended = true;
              if (!stopped) controller.close();
            } else {
              consumed.push(value);
              if (!stopped) controller.enqueue(value);
            }
          },
          (error: unknown) => {
            clientError = { error };
            if (!stopped) controller.error(error);
          },
        );
        return inFlight;
      },
    },
    { highWaterMark: 0 },
  );

  const decompressed = compressed.pipeThrough(new DecompressionStream(format)).getReader();
  let corrupt = false;
  try {
    while (line.state === "reading") {
      const { done, value } = await decompressed.read();
      if (done) break;
      line.push(value);
    }
  } catch {
    corrupt = true;
  } finally {
    stopped = true;
    decompressed.cancel().catch(() => {});
    await inFlight;
  }
  if (clientError) throw clientError.error;
  return { consumed, ended, corrupt };
}

/** Collects the bytes before the first newline, up to {@link MAX_HEADER_LINE_BYTES}. */
export class HeaderLineScanner {
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

export function parseHeaderLine(
  line: Uint8Array,
): { ok: true; dsn: string } | { ok: false; reason: "header_not_json" | "dsn_missing" } {
  let header: unknown;
  try {
    header = JSON.parse(utf8.decode(line));
  } catch {
    return { ok: false, reason: "header_not_json" };
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    return { ok: false, reason: "header_not_json" };
  }
  const dsn: unknown = (header as Record<string, unknown>).dsn;
  return typeof dsn === "string" ? { ok: true, dsn } : { ok: false, reason: "dsn_missing" };
}
