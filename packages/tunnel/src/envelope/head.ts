import type { BodyChunk, ChunkSource } from "../shared/body.ts";
import type { ContentEncoding } from "../request/content-encoding.ts";
import { HeaderLineScanner, parseHeaderLine } from "./header-line.ts";
import { Inflater } from "./inflate.ts";

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
 * Compressed bytes handed to the decompressor at a time: one slice inflates to at most some
 * 16.5 KiB, so a bomb gets no further than a few slices ahead of the line scanner before it has
 * looked at the output and said stop.
 */
const INFLATE_SLICE_BYTES = 16;

/** Inflates the body only as far as the line needs; the compressed bytes read are kept for forwarding. */
async function scanDecompressed(reader: ChunkSource, line: HeaderLineScanner, format: "gzip" | "deflate"): Promise<RawRead> {
  const inflater = new Inflater(reader, format, INFLATE_SLICE_BYTES);
  let corrupt = false;
  try {
    while (line.state === "reading") {
      const { done, value } = await inflater.read();
      if (done) break;
      line.push(value);
    }
  } catch {
    corrupt = true;
  } finally {
    await inflater.stop();
  }
  return { consumed: inflater.consumed, ended: inflater.ended, corrupt };
}
