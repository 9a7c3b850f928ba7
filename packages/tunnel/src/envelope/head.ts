import type { BodyChunk, ChunkSource } from "../shared/body.ts";
import type { ContentEncoding } from "../request/content-encoding.ts";
import { HeaderLineScanner, parseHeaderLine } from "./header-line.ts";

type HeadFailure =
  | "unsupported_encoding"
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
 * Reads the body only as far as the end of the envelope's header line. A compressed body is read
 * with `inflate` (the tunnel's `compressedBodies()`), only that much decompressed and the
 * compressed bytes read kept for forwarding; without it, it is refused unread.
 *
 * A read error from the body itself (the client went away) is rethrown, not reported as bad input.
 */
export async function readEnvelopeHead(reader: ChunkSource, encoding: ContentEncoding, inflate: ScanCompressed | undefined): Promise<HeadResult> {
  const line = new HeaderLineScanner();
  let raw: RawRead;
  if (encoding === "identity") raw = await scanPlain(reader, line);
  else if (inflate) raw = await inflate(reader, line, encoding);
  else return { ok: false, reason: "unsupported_encoding" };
  const consumedBytes = raw.consumed.reduce((total, chunk) => total + chunk.byteLength, 0);
  if (consumedBytes === 0) return { ok: false, reason: "empty_envelope" };
  if (raw.corrupt) return { ok: false, reason: "bad_compression" };
  if (line.state === "too_long") return { ok: false, reason: "header_too_long" };
  const header = parseHeaderLine(line.bytes());
  if (!header.ok) return header;
  return { ok: true, head: { dsn: header.dsn, consumed: raw.consumed, consumedBytes, ended: raw.ended } };
}

/** What the header line's scan read of the body. */
export interface RawRead {
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

/** Scans a compressed body for its header line: `compressedBodies()`, of `@edge-monitoring/tunnel/compressed`. */
export type ScanCompressed = (reader: ChunkSource, line: HeaderLineScanner, format: "gzip" | "deflate") => Promise<RawRead>;
