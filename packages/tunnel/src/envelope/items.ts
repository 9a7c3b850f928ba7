import { NEWLINE } from "./header-line.ts";

const utf8 = new TextDecoder();

/**
 * The item types of an envelope held whole and uncompressed (`event`, `transaction`, `log`, …), or
 * `undefined` when its items cannot be read: then only a limit on every category can apply to it.
 */
export function envelopeItemTypes(body: Uint8Array): string[] | undefined {
  let offset = body.indexOf(NEWLINE) + 1;
  if (offset === 0) return [];
  const types: string[] = [];
  while (offset < body.length) {
    const end = body.indexOf(NEWLINE, offset);
    const line = body.subarray(offset, end === -1 ? body.length : end);
    offset = end === -1 ? body.length : end + 1;
    if (line.length === 0) continue;
    let header: unknown;
    try {
      header = JSON.parse(utf8.decode(line));
    } catch {
      return undefined;
    }
    if (typeof header !== "object" || header === null) return undefined;
    const { type, length } = header as { type?: unknown; length?: unknown };
    if (typeof type !== "string") return undefined;
    types.push(type);
    if (typeof length === "number" && Number.isSafeInteger(length) && length >= 0) {
      offset += length + 1;
    } else {
      const payloadEnd = body.indexOf(NEWLINE, offset);
      offset = payloadEnd === -1 ? body.length : payloadEnd + 1;
    }
  }
  return types;
}
