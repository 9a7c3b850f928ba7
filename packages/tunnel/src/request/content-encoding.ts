/** What DecompressionStream in workerd can read; it has no brotli. */
export type ContentEncoding = "identity" | "gzip" | "deflate";

/** Codings that compress, which the tunnel cannot read through (workerd has no brotli or zstd). */
const UNREADABLE_COMPRESSIONS: ReadonlySet<string> = new Set(["br", "zstd", "compress", "x-compress"]);

/**
 * A `Content-Encoding` that names no coding at all (an old Android SDK sent `UTF-8`): Relay treats
 * such a body as not encoded, and so does the tunnel, if its header line then reads as one.
 */
export function isUnrecognisedCoding(headers: Headers): boolean {
  const value = (headers.get("content-encoding") ?? "").trim().toLowerCase();
  return contentEncodingOf(headers) === undefined && !UNREADABLE_COMPRESSIONS.has(value) && !value.includes(",");
}

/** `undefined` for an encoding the tunnel cannot read the header line through. */
export function contentEncodingOf(headers: Headers): ContentEncoding | undefined {
  const value = (headers.get("content-encoding") ?? "identity").trim().toLowerCase();
  switch (value) {
    case "":
    case "identity":
      return "identity";
    case "gzip":
    case "x-gzip":
      return "gzip";
    case "deflate":
      return "deflate";
    default:
      return undefined;
  }
}
