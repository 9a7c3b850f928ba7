import { describe, expect, it, vi } from "vitest";

import { createSpool, isSpooledEnvelope, unpacked, type Spool, type SpoolBody, type SpooledEnvelope } from "./store.ts";

const ENVELOPE = { headers: { "content-type": "application/x-sentry-envelope" }, dsn: "https://k@o1.ingest.sentry.io/2", receivedAt: 0 };

function fakes({ failSend = false } = {}) {
  const sent: SpooledEnvelope[] = [];
  const objects = new Map<string, unknown>();
  const queue = {
    send: vi.fn(async (message: SpooledEnvelope) => {
      if (failSend) throw new Error("queue down");
      sent.push(message);
    }),
  } as unknown as Queue<SpooledEnvelope>;
  const bucket = {
    put: vi.fn(async (key: string, value: unknown) => void objects.set(key, value)),
    delete: vi.fn(async (key: string) => void objects.delete(key)),
  } as unknown as R2Bucket;
  return { sent, objects, queue, bucket };
}

/** As the tunnel stores: packed first, then stored. */
async function packAndStore(spool: Spool, body: SpoolBody): Promise<boolean> {
  const packed = await spool.pack(ENVELOPE, body);
  return spool.store(packed.envelope, packed.body);
}

describe("createSpool", () => {
  it("keeps a body that fits in the message in it, and a larger one in R2 with its key in the message", async () => {
    const { sent, objects, queue, bucket } = fakes();
    const spool = createSpool({ queue, bucket });
    expect(await packAndStore(spool, new Uint8Array(100_000))).toBe(true);
    expect(await spool.store(ENVELOPE, new Uint8Array(130_000))).toBe(true);
    // Packed: 100,000 zeros take a few hundred bytes gzipped, and come back whole.
    expect(sent[0]!.body!.byteLength).toBeLessThan(1_000);
    expect(await unpacked(sent[0]!, sent[0]!.body!, 1_000_000)).toEqual({ body: new Uint8Array(100_000), headers: { ...ENVELOPE.headers, "content-length": "100000" } });
    expect(sent[1]!.body).toBeUndefined();
    expect(objects.has(sent[1]!.key!)).toBe(true);
    expect(sent.every(isSpooledEnvelope)).toBe(true);
  });

  it("reads a short stream whole into the message", async () => {
    const { sent, queue, bucket } = fakes();
    const stream = new Response(new Uint8Array(5_000)).body!;
    expect(await packAndStore(createSpool({ queue, bucket }), { stream, length: 5_000 })).toBe(true);
    // A stream is stored as it came: it is not packed.
    expect(sent[0]!.packed).toBeUndefined();
    expect(sent[0]!.body?.byteLength).toBe(5_000);
  });

  it("packs an uncompressed body with gzip, says so in its headers for a consumer of a version before, and keeps one that gzip would not shrink as it came", async () => {
    const { sent, queue } = fakes();
    const spool = createSpool({ queue });
    const json = new TextEncoder().encode(`{"dsn":"x"}\n{"type":"event"}\n${JSON.stringify({ message: "a".repeat(20_000) })}\n`);
    const random = crypto.getRandomValues(new Uint8Array(20_000));
    expect(await packAndStore(spool, json)).toBe(true);
    expect(await packAndStore(spool, random)).toBe(true);
    expect(sent[0]).toMatchObject({ packed: "gzip", headers: { "content-encoding": "gzip", "content-length": String(sent[0]!.body!.byteLength) } });
    expect((await unpacked(sent[0]!, sent[0]!.body!, 1_000_000))?.body).toEqual(json);
    // Too large inflated: not unpacked.
    expect(await unpacked(sent[0]!, sent[0]!.body!, 1_000)).toBeUndefined();
    expect(sent[1]!.packed).toBeUndefined();
    expect(sent[1]!.body).toEqual(random);
  });

  it("keeps a body still over 32 KB packed in R2 when a bucket is bound, and the message small", async () => {
    const { sent, objects, queue, bucket } = fakes();
    const replay = crypto.getRandomValues(new Uint8Array(40_000));
    expect(await packAndStore(createSpool({ queue, bucket }), replay)).toBe(true);
    expect(sent[0]).toMatchObject({ key: expect.stringMatching(/^spool\//) });
    expect(sent[0]!.body).toBeUndefined();
    expect(objects.get(sent[0]!.key!)).toEqual(replay);
  });

  it("says what it cannot take without a bucket, and stores none of it", async () => {
    const { sent, queue } = fakes();
    const spool = createSpool({ queue });
    expect(100_000 <= spool.room(ENVELOPE)).toBe(true);
    expect(200_000 <= spool.room(ENVELOPE)).toBe(false);
    expect(await spool.store(ENVELOPE, new Uint8Array(200_000))).toBe(false);
    expect(sent).toEqual([]);
  });

  it("answers false when the queue fails, and leaves no R2 object behind", async () => {
    const { objects, queue, bucket } = fakes({ failSend: true });
    const spool = createSpool({ queue, bucket });
    expect(await spool.store(ENVELOPE, new Uint8Array(100))).toBe(false);
    expect(await spool.store(ENVELOPE, new Uint8Array(200_000))).toBe(false);
    expect(objects.size).toBe(0);
  });
});
