import { deflateSync, gunzipSync, gzipSync, inflateSync } from "node:zlib";
import { randomBytes } from "node:crypto";

import { describe, expect, it } from "vitest";

import { withShiftedSentAt } from "./sent-at-shift.ts";

const HOUR = 60 * 60 * 1000;
const header = { dsn: "https://k@o1.ingest.sentry.io/2", event_id: "a".repeat(32), sent_at: "2026-11-22T10:00:00.000Z", sdk: { name: "x" } };
const items = '{"type":"event"}\n{"timestamp":1795341600}\n';
const envelope = Buffer.from(`${JSON.stringify(header)}\n${items}`);
const shiftedText = `${JSON.stringify({ ...header, sent_at: "2026-11-22T11:00:00.000Z" })}\n${items}`;

describe("withShiftedSentAt", () => {
  it("moves sent_at by the wait and changes nothing else", async () => {
    const shifted = Buffer.from((await withShiftedSentAt(envelope, "identity", HOUR, 1_000_000))!);
    expect(shifted.toString()).toBe(shiftedText);
  });

  it.each([
    ["gzip", gzipSync, gunzipSync],
    ["deflate", deflateSync, inflateSync],
  ] as const)("keeps a %s body compressed, with the shift inside, no larger than it came", async (encoding, compress, inflate) => {
    // An attachment of incompressible bytes: compressing again cannot win anything back.
    const attachment = randomBytes(50_000);
    const body = Buffer.concat([envelope, Buffer.from(`{"type":"attachment","length":${attachment.length}}\n`), attachment]);
    const sent = compress(body);
    const shifted = Buffer.from((await withShiftedSentAt(sent, encoding, HOUR, 1_000_000))!);
    expect(inflate(shifted).equals(Buffer.concat([Buffer.from(shiftedText), body.subarray(envelope.length)]))).toBe(true);
    expect(shifted.length).toBeLessThanOrEqual(sent.length + 32);
  });

  it("keeps a small gzip body small however far it inflates: a 20 KiB bomb goes out at its own size", async () => {
    const bomb = gzipSync(Buffer.concat([envelope, Buffer.alloc(20 * 1024 * 1024)]));
    expect(bomb.length).toBeLessThan(30 * 1024);
    const shifted = await withShiftedSentAt(bomb, "gzip", HOUR, 21 * 1024 * 1024);
    expect(shifted).toBeDefined();
    expect(shifted!.byteLength).toBeLessThanOrEqual(bomb.length + 32);
  });

  it.each([
    ["no sent_at", Buffer.from(`{"dsn":"x"}\n${items}`), "identity"],
    ["a sent_at that is not a date", Buffer.from(`{"dsn":"x","sent_at":"soon"}\n${items}`), "identity"],
    ["a sent_at the shift moves out of the date range", Buffer.from(`{"dsn":"x","sent_at":"+275760-09-13T00:00:00.000Z"}\n${items}`), "identity"],
    ["a sent_at the shift moves out of the date range, gzipped", gzipSync(`{"dsn":"x","sent_at":"+275760-09-13T00:00:00.000Z"}\n${items}`), "gzip"],
    ["a header that is not JSON", Buffer.from(`nope\n${items}`), "identity"],
    ["a header that is a JSON array", Buffer.from(`[1]\n${items}`), "identity"],
    ["a body that inflates past the maximum", gzipSync(Buffer.concat([envelope, Buffer.alloc(2_000_000)])), "gzip"],
    ["a body that is not gzip", envelope, "gzip"],
    ["a gzip body cut short", gzipSync(envelope).subarray(0, 40), "gzip"],
  ] as const)("leaves the body as it is with %s", async (_name, body, encoding) => {
    expect(await withShiftedSentAt(body, encoding, HOUR, 1_000_000)).toBeUndefined();
  });
});
