/**
 * `@edge-monitoring/tunnel/compressed`: envelopes sent with `Content-Encoding: gzip` or `deflate`,
 * as Sentry's server SDKs send large ones (browsers' SDKs send none). Only the header line is
 * inflated, a few bytes at a time, so that a bomb is stopped where the line ends; the body goes to
 * Sentry as it came. A Worker that does not import it does not carry the inflater, and refuses such
 * envelopes with 415 `unsupported_encoding`.
 */
import { BUILD, type TunnelCapability } from "./setup/capability.ts";
import { scanCompressedHead } from "./envelope/inflate.ts";

/** Compressed envelopes, for a tunnel's `compressedBodies` option: `createTunnel({ …, compressedBodies: compressedBodies() })`. */
export function compressedBodies(): TunnelCapability<"compressed"> {
  return { kind: "compressed", [BUILD]: () => ({ scan: scanCompressedHead }) };
}
