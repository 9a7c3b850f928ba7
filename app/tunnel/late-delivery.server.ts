import { inflateSync, gunzipSync } from "node:zlib";

import type { ContentEncoding } from "./header-policy.server";

const NEWLINE = 0x0a;
const utf8 = new TextDecoder();
const encoder = new TextEncoder();

/**
 * The envelope as it should go out after waiting `waitedMs` in the spool: its header's `sent_at`
 * moved later by the wait, and nothing else changed. Relay corrects an event's timestamps by
 * (arrival − `sent_at`) when that passes 55 minutes, so an envelope an hour late would have its
 * events moved to the delivery time; moved by the wait, `sent_at` again tells Relay only the
 * client's own clock drift, which it should still correct.
 *
 * A compressed body is inflated (up to `maxBytes`) and goes out uncompressed. `undefined` when the
 * body goes out as it is: no `sent_at`, or a body that cannot be read.
 */
export function withShiftedSentAt(
  body: Uint8Array,
  encoding: ContentEncoding,
  waitedMs: number,
  maxBytes: number,
): Uint8Array | undefined {
  let plain: Uint8Array;
  try {
    plain = encoding === "identity" ? body : inflated(body, encoding, maxBytes);
  } catch {
    return undefined;
  }
  const end = plain.indexOf(NEWLINE);
  const line = plain.subarray(0, end === -1 ? plain.length : end);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(utf8.decode(line)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const sentAt = typeof header.sent_at === "string" ? Date.parse(header.sent_at) : Number.NaN;
  if (Number.isNaN(sentAt)) return undefined;
  const shifted = encoder.encode(JSON.stringify({ ...header, sent_at: new Date(sentAt + waitedMs).toISOString() }));
  const rest = end === -1 ? new Uint8Array(0) : plain.subarray(end);
  const out = new Uint8Array(shifted.byteLength + rest.byteLength);
  out.set(shifted, 0);
  out.set(rest, shifted.byteLength);
  return out;
}

/** workerd's zlib stops at `maxOutputLength` rather than inflating a bomb whole. */
function inflated(body: Uint8Array, encoding: "gzip" | "deflate", maxBytes: number): Uint8Array {
  const options = { maxOutputLength: maxBytes };
  return encoding === "gzip" ? gunzipSync(body, options) : inflateSync(body, options);
}
