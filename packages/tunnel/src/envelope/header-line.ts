import { joinChunks, type BodyChunk } from "../shared/body.ts";

/** An envelope's header is a small JSON object (DSN, ids, trace context): 64 KiB is far past any real one. */
export const MAX_HEADER_LINE_BYTES = 64 * 1024;

/** What ends the header line and each item's line. */
export const NEWLINE = 0x0a;

/** Collects the bytes before the first newline, up to {@link MAX_HEADER_LINE_BYTES}. */
export class HeaderLineScanner {
  state: "reading" | "complete" | "too_long" = "reading";
  readonly #parts: BodyChunk[] = [];
  #length = 0;

  push(chunk: BodyChunk): void {
    if (this.state !== "reading") return;
    const newline = chunk.indexOf(NEWLINE);
    const part = newline === -1 ? chunk : chunk.subarray(0, newline);
    if (this.#length + part.byteLength > MAX_HEADER_LINE_BYTES) {
      this.state = "too_long";
      return;
    }
    this.#parts.push(part);
    this.#length += part.byteLength;
    if (newline !== -1) this.state = "complete";
  }

  /** The line so far; at the end of the body, the end of the body ends it too. */
  bytes(): BodyChunk {
    return joinChunks(this.#parts, this.#length);
  }
}

const utf8 = new TextDecoder();

export function parseHeaderLine(
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
  const dsn: unknown = (header as Record<string, unknown>)["dsn"];
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

