import { describe, expect, it, vi } from "vitest";

import { BindingFailed } from "./binding-call.ts";
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

const names = { queue: "TUNNEL_SPOOL", bucket: "TUNNEL_SPOOL_BUCKET" };
/** No bound on a call but the test's own. */
const unbounded = <T>(call: Promise<T>) => call;

/** As the tunnel stores: packed first, then stored. */
async function packAndStore(spool: Spool, body: SpoolBody): Promise<void> {
  const packed = await spool.pack(ENVELOPE, body);
  return spool.store(packed.envelope, packed.body, unbounded);
}

/** The binding a store's refusal names. */
const failedBinding = (storing: Promise<void>) => storing.then(() => undefined, (error: unknown) => (error instanceof BindingFailed ? error.binding : error));

describe("createSpool", () => {
  it("keeps a body that fits in the message in it, and a larger one in R2 with its key in the message", async () => {
    const { sent, objects, queue, bucket } = fakes();
    const spool = createSpool({ queue, bucket, names });
    await packAndStore(spool, new Uint8Array(100_000));
    await spool.store(ENVELOPE, new Uint8Array(130_000), unbounded);
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
    await packAndStore(createSpool({ queue, bucket, names }), { stream, length: 5_000 });
    // A stream is stored as it came: it is not packed.
    expect(sent[0]!.packed).toBeUndefined();
    expect(sent[0]!.body?.byteLength).toBe(5_000);
  });

  it("packs an uncompressed body with gzip, says so in its headers for a consumer of a version before, and keeps one that gzip would not shrink as it came", async () => {
    const { sent, queue } = fakes();
    const spool = createSpool({ queue, names });
    const json = new TextEncoder().encode(`{"dsn":"x"}\n{"type":"event"}\n${JSON.stringify({ message: "a".repeat(20_000) })}\n`);
    const random = crypto.getRandomValues(new Uint8Array(20_000));
    await packAndStore(spool, json);
    await packAndStore(spool, random);
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
    await packAndStore(createSpool({ queue, bucket, names }), replay);
    expect(sent[0]).toMatchObject({ key: expect.stringMatching(/^spool\//) });
    expect(sent[0]!.body).toBeUndefined();
    expect(objects.get(sent[0]!.key!)).toEqual(replay);
  });

  it("says what it cannot take without a bucket: what a message holds beside the envelope", async () => {
    const spool = createSpool({ queue: fakes().queue, names });
    expect(100_000 <= spool.room(ENVELOPE)).toBe(true);
    expect(200_000 <= spool.room(ENVELOPE)).toBe(false);
  });

  it("names the queue when it fails, and leaves no R2 object behind", async () => {
    const { objects, queue, bucket } = fakes({ failSend: true });
    const spool = createSpool({ queue, bucket, names });
    expect(await failedBinding(spool.store(ENVELOPE, new Uint8Array(100), unbounded))).toBe("TUNNEL_SPOOL");
    expect(await failedBinding(spool.store(ENVELOPE, new Uint8Array(200_000), unbounded))).toBe("TUNNEL_SPOOL");
    expect(objects.size).toBe(0);
  });

  it("names the bucket when its put outlasts the bound, and deletes the object once the late put lands", async () => {
    const { objects, queue, bucket } = fakes();
    let land!: () => void;
    bucket.put = vi.fn((key: string, value: unknown) => new Promise<R2Object>((resolve) => (land = () => (objects.set(key, value), resolve({} as R2Object)))));
    const spool = createSpool({ queue, bucket, names });
    const bound = <T>(call: Promise<T>) => Promise.race([call, Promise.reject<T>(new Error("the bound passed"))]);
    expect(await failedBinding(spool.store(ENVELOPE, new Uint8Array(200_000), bound))).toBe("TUNNEL_SPOOL_BUCKET");
    land();
    await vi.waitFor(() => expect(objects.size).toBe(0));
  });
});
