import { describe, expect, it, vi } from "vitest";

import { createSpool, isSpooledEnvelope, type SpooledEnvelope } from "./store.ts";

const ENVELOPE = { url: "https://o1.ingest.sentry.io/api/2/envelope/", headers: { "content-type": "application/x-sentry-envelope" }, dsn: "https://k@o1.ingest.sentry.io/2", receivedAt: 0 };

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

describe("createSpool", () => {
  it("keeps a body that fits in the message in it, and a larger one in R2 with its key in the message", async () => {
    const { sent, objects, queue, bucket } = fakes();
    const spool = createSpool({ queue, bucket });
    expect(await spool.store(ENVELOPE, new Uint8Array(100_000))).toBe(true);
    expect(await spool.store(ENVELOPE, new Uint8Array(130_000))).toBe(true);
    expect(sent[0]!.body?.byteLength).toBe(100_000);
    expect(sent[1]!.body).toBeUndefined();
    expect(objects.has(sent[1]!.key!)).toBe(true);
    expect(sent.every(isSpooledEnvelope)).toBe(true);
  });

  it("reads a short stream whole into the message", async () => {
    const { sent, queue, bucket } = fakes();
    const stream = new Response(new Uint8Array(5_000)).body!;
    expect(await createSpool({ queue, bucket }).store(ENVELOPE, { stream, length: 5_000 })).toBe(true);
    expect(sent[0]!.body?.byteLength).toBe(5_000);
  });

  it("says what it cannot take without a bucket, and stores none of it", async () => {
    const { sent, queue } = fakes();
    const spool = createSpool({ queue });
    expect(spool.accepts(ENVELOPE, 100_000)).toBe(true);
    expect(spool.accepts(ENVELOPE, 200_000)).toBe(false);
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
