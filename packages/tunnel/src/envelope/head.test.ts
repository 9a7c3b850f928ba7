import { gzipSync, deflateSync } from "node:zlib";

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { wholeBody, type BodyChunk } from "../shared/body.ts";
import { TEST_DSN } from "../testing/harness.ts";
import { readEnvelopeHead, type HeadResult } from "./head.ts";
import { scanCompressedHead } from "./inflate.ts";
import { MAX_HEADER_LINE_BYTES } from "./header-line.ts";

const encoder = new TextEncoder();

function envelope(header: object = { dsn: TEST_DSN, sent_at: "2026-11-21T00:00:00Z" }): Uint8Array {
  return encoder.encode(
    `${JSON.stringify(header)}\n{"type":"event","length":41}\n{"message":"hello","level":"error","x":1}\n`,
  );
}

function streamOf(chunks: Uint8Array[]): ReadableStream<BodyChunk> {
  let next = 0;
  return new ReadableStream<BodyChunk>({
    pull(controller) {
      const chunk = chunks[next++];
      if (chunk) controller.enqueue(new Uint8Array(chunk));
      else controller.close();
    },
  });
}

function splitAt(bytes: Uint8Array, ...cuts: number[]): Uint8Array[] {
  const edges = [0, ...cuts, bytes.byteLength];
  return edges.slice(1).map((end, index) => bytes.subarray(edges[index], end));
}

async function readAll(reader: ReadableStreamDefaultReader<BodyChunk>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push(value);
  }
}

function joined(chunks: readonly Uint8Array[]): Buffer {
  return Buffer.concat(chunks.map((chunk) => Buffer.from(chunk)));
}

/** Reads the head, then the rest: what the tunnel would forward, in order. */
async function readThrough(chunks: Uint8Array[], encoding: "identity" | "gzip" | "deflate" = "identity") {
  const reader = streamOf(chunks).getReader();
  const result = await readEnvelopeHead(reader, encoding, scanCompressedHead);
  const rest = await readAll(reader);
  return { result, forwarded: result.ok ? joined([...result.head.consumed, ...rest]) : undefined };
}

function failure(result: HeadResult): string | undefined {
  return result.ok ? undefined : result.reason;
}

describe("readEnvelopeHead", () => {
  it("finds the DSN wherever the chunks split the body, and loses no byte", async () => {
    const body = envelope();
    for (let cut = 0; cut <= body.byteLength; cut++) {
      const { result, forwarded } = await readThrough(splitAt(body, cut));
      expect(result.ok && result.head.dsn, `cut at ${cut}`).toBe(TEST_DSN);
      expect(forwarded?.equals(body), `cut at ${cut}`).toBe(true);
    }
  });

  it("finds the DSN when every byte is its own chunk", async () => {
    const body = envelope();
    const { result, forwarded } = await readThrough([...body].map((byte) => Uint8Array.of(byte)));
    expect(result.ok && result.head.dsn).toBe(TEST_DSN);
    expect(forwarded?.equals(body)).toBe(true);
  });

  it("reads through gzip and deflate wherever the compressed chunks split, forwarding the compressed bytes", async () => {
    for (const [encoding, compress] of [
      ["gzip", gzipSync],
      ["deflate", deflateSync],
    ] as const) {
      const compressed = new Uint8Array(compress(envelope()));
      for (let cut = 0; cut <= compressed.byteLength; cut++) {
        const { result, forwarded } = await readThrough(splitAt(compressed, cut), encoding);
        expect(result.ok && result.head.dsn, `${encoding} cut at ${cut}`).toBe(TEST_DSN);
        expect(forwarded?.equals(compressed), `${encoding} cut at ${cut}`).toBe(true);
      }
    }
  });

  it("reads a body taken whole, plain or compressed", async () => {
    for (const [encoding, body] of [
      ["identity", envelope()],
      ["gzip", new Uint8Array(gzipSync(envelope()))],
    ] as const) {
      const result = await readEnvelopeHead(wholeBody(new Uint8Array(body)), encoding, scanCompressedHead);
      expect(result.ok && result.head.dsn, encoding).toBe(TEST_DSN);
      expect(result.ok && joined(result.head.consumed).equals(body), encoding).toBe(true);
    }
    expect(failure(await readEnvelopeHead(wholeBody(new Uint8Array(0)), "identity", undefined))).toBe("empty_envelope");
  });

  it("does not read past the header line when more chunks follow", async () => {
    const body = envelope();
    const newline = body.indexOf(0x0a);
    const reader = streamOf(splitAt(body, newline + 1, newline + 10)).getReader();
    const result = await readEnvelopeHead(reader, "identity", undefined);
    expect(result.ok && result.head.ended).toBe(false);
    expect(result.ok && result.head.consumedBytes).toBe(newline + 1);
  });

  it("takes the end of the body as the end of a header-only envelope", async () => {
    const { result } = await readThrough([encoder.encode(JSON.stringify({ dsn: TEST_DSN }))]);
    expect(result.ok && result.head.ended).toBe(true);
  });

  it("accepts a header line of exactly 64 KiB and refuses one a byte longer", async () => {
    const header = (length: number) => {
      const bare = JSON.stringify({ dsn: TEST_DSN, pad: "" });
      return encoder.encode(JSON.stringify({ dsn: TEST_DSN, pad: "x".repeat(length - bare.length) }));
    };
    const fits = await readThrough([header(MAX_HEADER_LINE_BYTES), encoder.encode("\n{}")]);
    expect(fits.result.ok).toBe(true);
    const tooLong = await readThrough([header(MAX_HEADER_LINE_BYTES + 1), encoder.encode("\n{}")]);
    expect(failure(tooLong.result)).toBe("header_too_long");
  });

  it("lets the same key stand in different objects, and a key's name stand as a value", async () => {
    const header = { dsn: TEST_DSN, trace: { dsn: "x", list: [{ id: 1 }, { id: 2 }] }, note: "dsn" };
    const { result } = await readThrough([envelope(header)]);
    expect(result.ok && result.head.dsn).toBe(TEST_DSN);
  });

  it("refuses a gzip bomb without a newline after 64 KiB of output", async () => {
    const bomb = new Uint8Array(gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20)));
    const { result } = await readThrough([bomb], "gzip");
    expect(failure(result)).toBe("header_too_long");
  });

  it.each([
    ["an empty body", [], "identity", "empty_envelope"],
    ["a header that is not JSON", [encoder.encode("dsn=x\n{}")], "identity", "header_not_json"],
    ["a header that is a JSON array", [encoder.encode(`["${TEST_DSN}"]\n{}`)], "identity", "header_not_json"],
    ["a header that is JSON null", [encoder.encode("null\n")], "identity", "header_not_json"],
    ["a header without a dsn", [encoder.encode('{"event_id":"1"}\n{}')], "identity", "dsn_missing"],
    ["a dsn that is not a string", [encoder.encode('{"dsn":42}\n{}')], "identity", "dsn_missing"],
    ["two dsn keys", [encoder.encode(`{"dsn":"https://k@evil.example/1","dsn":"${TEST_DSN}"}\n{}`)], "identity", "header_repeated_key"],
    ["two dsn keys, one escaped", [encoder.encode(`{"\\u0064sn":"https://k@evil.example/1","dsn":"${TEST_DSN}"}\n{}`)], "identity", "header_repeated_key"],
    ["a repeated key in a nested object", [encoder.encode(`{"dsn":"${TEST_DSN}","trace":{"a":1,"a":2}}\n{}`)], "identity", "header_repeated_key"],
    ["a body that is not gzip", [encoder.encode(`{"dsn":"${TEST_DSN}"}\n`)], "gzip", "bad_compression"],
  ] as const)("reports %s", async (_name, chunks, encoding, reason) => {
    const { result } = await readThrough([...chunks], encoding);
    expect(failure(result)).toBe(reason);
  });

  it("refuses a compressed body unread when the tunnel reads none (no compressedBodies)", async () => {
    const source = streamOf([new Uint8Array(gzipSync(envelope()))]).getReader();
    expect(failure(await readEnvelopeHead(source, "gzip", undefined))).toBe("unsupported_encoding");
    expect(await readAll(source)).toHaveLength(1);
  });

  it("passes on a read error from the body instead of calling it bad input", async () => {
    for (const encoding of ["identity", "gzip"] as const) {
      const gone = new ReadableStream<BodyChunk>({
        start(controller) {
          controller.enqueue(new Uint8Array(encoding === "gzip" ? gzipSync(envelope()).subarray(0, 10) : [0x7b]));
        },
        pull(controller) {
          controller.error(new Error("client went away"));
        },
      });
      await expect(readEnvelopeHead(gone.getReader(), encoding, scanCompressedHead)).rejects.toThrow("client went away");
    }
  });

  it("never throws on arbitrary bytes, in any chunking", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 6 }),
        fc.constantFrom("identity", "gzip", "deflate"),
        async (chunks, encoding) => {
          const { result, forwarded } = await readThrough(chunks, encoding);
          if (result.ok) expect(forwarded?.equals(joined(chunks))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("reads any envelope's DSN and keeps every byte, however it is chunked and compressed", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ dsn: fc.string(), event_id: fc.uuid(), extra: fc.jsonValue() }),
        fc.uint8Array({ maxLength: 2_000 }),
        fc.array(fc.nat(), { maxLength: 5 }),
        fc.constantFrom("identity", "gzip", "deflate"),
        async (header, items, cutSeeds, encoding) => {
          const plain = joined([encoder.encode(`${JSON.stringify(header)}\n`), items]);
          const body = encoding === "gzip" ? gzipSync(plain) : encoding === "deflate" ? deflateSync(plain) : plain;
          const cuts = [...new Set(cutSeeds.map((seed) => seed % (body.byteLength + 1)))].sort((a, b) => a - b);
          const { result, forwarded } = await readThrough(splitAt(new Uint8Array(body), ...cuts), encoding);
          expect(result.ok && result.head.dsn).toBe(header.dsn);
          expect(forwarded?.equals(body)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("never reports an envelope whose header line was mutated as anything but a clear failure or a DSN", async () => {
    const body = envelope();
    const newline = body.indexOf(0x0a);
    await fc.assert(
      fc.asyncProperty(fc.nat(newline - 1), fc.integer({ min: 0, max: 255 }), async (position, byte) => {
        const mutated = new Uint8Array(body);
        mutated[position] = byte;
        const { result } = await readThrough([mutated]);
        if (result.ok) expect(typeof result.head.dsn).toBe("string");
        else expect(["header_not_json", "dsn_missing"]).toContain(result.reason);
      }),
      { numRuns: 500 },
    );
  });
});
