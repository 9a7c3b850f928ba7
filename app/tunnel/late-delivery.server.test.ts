import { deflateSync, gzipSync } from "node:zlib";

import { describe, expect, it } from "vitest";

import { withShiftedSentAt } from "./late-delivery.server";

const HOUR = 60 * 60 * 1000;
const header = { dsn: "https://k@o1.ingest.sentry.io/2", event_id: "a".repeat(32), sent_at: "2026-11-22T10:00:00.000Z", sdk: { name: "x" } };
const items = '{"type":"event"}\n{"timestamp":1795341600}\n';
const envelope = Buffer.from(`${JSON.stringify(header)}\n${items}`);

describe("withShiftedSentAt", () => {
  it("moves sent_at by the wait and changes nothing else", () => {
    const shifted = Buffer.from(withShiftedSentAt(envelope, "identity", HOUR, 1_000_000)!);
    expect(shifted.toString()).toBe(`${JSON.stringify({ ...header, sent_at: "2026-11-22T11:00:00.000Z" })}\n${items}`);
  });

  it.each([
    ["gzip", gzipSync],
    ["deflate", deflateSync],
  ] as const)("reads a %s body and returns it uncompressed", (encoding, compress) => {
    const shifted = Buffer.from(withShiftedSentAt(compress(envelope), encoding, HOUR, 1_000_000)!);
    expect(shifted.toString()).toContain('"sent_at":"2026-11-22T11:00:00.000Z"');
    expect(shifted.toString().endsWith(`\n${items}`)).toBe(true);
  });

  it.each([
    ["no sent_at", Buffer.from(`{"dsn":"x"}\n${items}`), "identity"],
    ["a sent_at that is not a date", Buffer.from(`{"dsn":"x","sent_at":"soon"}\n${items}`), "identity"],
    ["a header that is not JSON", Buffer.from(`nope\n${items}`), "identity"],
    ["a body that inflates past the maximum", gzipSync(Buffer.concat([envelope, Buffer.alloc(2_000_000)])), "gzip"],
    ["a body that is not gzip", envelope, "gzip"],
  ] as const)("leaves the body as it is with %s", (_name, body, encoding) => {
    expect(withShiftedSentAt(body, encoding, HOUR, 1_000_000)).toBeUndefined();
  });
});
