import { MAX_HEADER_LINE_BYTES, NEWLINE } from "../envelope/header-line.ts";
import { Inflater } from "../envelope/inflate.ts";
import type { ContentEncoding } from "../request/content-encoding.ts";
import { joinChunks, readUpTo, utf8Bytes, wholeBody, type BodyChunk } from "../shared/body.ts";

/**
 * Compressed bytes handed to the decompressor at a time: deflate expands at most about 1032:1, so
 * a slice of a bomb inflates to some 4 MiB at most before the reader has looked at it.
 */
const INPUT_SLICE_BYTES = 4 * 1024;
/** What a recompressed body may grow beyond the original and the shift: gzip's framing differs by encoder. */
const FRAMING_SLACK_BYTES = 32;

const utf8 = new TextDecoder();

/**
 * The envelope as it should go out after waiting `waitedMs` in the spool: its header's `sent_at`
 * moved later by the wait, and nothing else changed. Relay corrects an event's timestamps by
 * (arrival − `sent_at`) when that passes 55 minutes, so an envelope an hour late would have its
 * events moved to the delivery time; moved by the wait, `sent_at` again tells Relay only the
 * client's own clock drift, which it should still correct.
 *
 * A compressed body is inflated as a stream (up to `maxInflatedBytes`) and compressed again with
 * the same coding: it goes out no larger than it came, beyond the shift. `undefined` means "send it as it
 * was stored": no `sent_at`, one the shift cannot move (out of the date range), a body that cannot
 * be read, one that inflates past `maxInflatedBytes`, or one that would grow when compressed again.
 */
export async function withShiftedSentAt(
  body: BodyChunk,
  encoding: ContentEncoding,
  waitedMs: number,
  maxInflatedBytes: number,
): Promise<BodyChunk | undefined> {
  if (encoding === "identity") {
    const end = body.indexOf(NEWLINE);
    const line = body.subarray(0, end === -1 ? Math.min(body.length, MAX_HEADER_LINE_BYTES + 1) : end);
    const shifted = shiftedHeaderLine(line, waitedMs);
    return shifted && joinChunks([shifted, body.subarray(line.byteLength)], shifted.byteLength + body.byteLength - line.byteLength);
  }
  try {
    return await recompressedWithShift(body, encoding, waitedMs, maxInflatedBytes);
  } catch {
    // Not the coding it says, cut short, or inflating past the maximum.
    return undefined;
  }
}

/** The header line with `sent_at` moved by `waitedMs`; `undefined` when there is none to move. */
function shiftedHeaderLine(line: BodyChunk, waitedMs: number): Uint8Array<ArrayBuffer> | undefined {
  if (line.byteLength > MAX_HEADER_LINE_BYTES) return undefined;
  try {
    const header = JSON.parse(utf8.decode(line)) as unknown;
    if (typeof header !== "object" || header === null || Array.isArray(header)) return undefined;
    const { sent_at: sentAt } = header as Record<string, unknown>;
    if (typeof sentAt !== "string") return undefined;
    // Throws a RangeError for a date the shift moves out of range (`+275760-09-13T00:00:00.000Z`).
    const moved = new Date(Date.parse(sentAt) + waitedMs).toISOString();
    return utf8Bytes(JSON.stringify({ ...header, sent_at: moved }));
  } catch {
    return undefined;
  }
}

/**
 * Inflated as a stream and compressed again with the same coding, with the shift made on the way:
 * the inflated envelope is never held whole, and workerd's own compression streams do the work.
 */
async function recompressedWithShift(body: BodyChunk, encoding: "gzip" | "deflate", waitedMs: number, maxInflatedBytes: number): Promise<BodyChunk | undefined> {
  const inflater = new Inflater(wholeBody(body), encoding, INPUT_SLICE_BYTES);
  try {
    // The header line, as far as the first newline.
    const start: BodyChunk[] = [];
    let startBytes = 0;
    let newline = -1;
    while (newline === -1) {
      const { done, value } = await inflater.read();
      if (done) break;
      const found = value.indexOf(NEWLINE);
      if (found !== -1) newline = startBytes + found;
      start.push(value);
      startBytes += value.byteLength;
      if (newline === -1 && startBytes > MAX_HEADER_LINE_BYTES) return undefined;
    }
    const head = joinChunks(start, startBytes);
    const lineEnd = newline === -1 ? startBytes : newline;
    const shifted = shiftedHeaderLine(head.subarray(0, lineEnd), waitedMs);
    if (!shifted) return undefined;

    // Past the limit, the output is no longer read, so the next write fails and stops the loop.
    const limit = body.byteLength + Math.max(0, shifted.byteLength - lineEnd) + FRAMING_SLACK_BYTES;
    const compressor = new CompressionStream(encoding);
    const output = readUpTo(compressor.readable as ReadableStream<BodyChunk>, limit).catch(() => undefined);
    const writer = compressor.writable.getWriter();
    try {
      await writer.write(shifted);
      await writer.write(head.subarray(lineEnd));
      let total = startBytes;
      for (;;) {
        const { done, value } = await inflater.read();
        if (done) break;
        total += value.byteLength;
        if (total > maxInflatedBytes) throw new RangeError("larger than allowed");
        await writer.write(value);
      }
      await writer.close();
    } catch {
      await writer.abort().catch(() => {});
    }
    return await output;
  } finally {
    await inflater.stop().catch(() => {});
  }
}

