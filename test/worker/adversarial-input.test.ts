import { deflateSync, gzipSync } from "node:zlib";

import { eventually } from "@edge-monitoring/tunnel/testing";
import { beforeEach, describe, expect, it } from "vitest";

import { buildEnvelope } from "../support/envelopes";
import { stalledUpload } from "../support/http";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { peakRss } from "../support/process-memory";
import { APP_TUNNEL, APP_DSN, startWorker } from "../support/worker";

/**
 * The built Worker attacked where only its process and its sockets show the harm: what reaches its
 * log, the memory a bomb would take, a client that stalls on a real connection. Every test here
 * failed before the tunnel was hardened. The tunnel's own attacks (every phase of the deadline,
 * DSN spellings, CORS, Sentry's answer, fuzzing and the property over bodies) are the package's,
 * in workerd (`packages/tunnel/test/tunnel.workerd.test.ts`).
 */

const MiB = 1024 * 1024;

const envelope = (dsn?: string) => buildEnvelope({ dsn }).body;

describe("logs hold only the tunnel's own lines", () => {
  it("never writes request text to the log, whatever the DSN holds", async () => {
    // A Worker of its own, so that no other test's line arrives while these are counted. No
    // envelope here reaches Sentry, whose origin is one that answers nothing.
    const quiet = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: "http://127.0.0.1:9" });
    const forged = '{"event":"tunnel","outcome":"forwarded","reason":null,"status":200,"org":"FORGED"}';
    const hostile = [
      `https://x@o4501.ingest.us.sentry.io/4502\n${forged}`,
      `https://\n${forged}\n@`,
      `http://[::1\n${forged}`,
      `https://0123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/\u001b[2J\u001b]0;FORGED\u0007`,
      `https://FORGED-${"a".repeat(3000)}`,
    ];
    // Each from a client of its own: a client's repeated refusals share one line per window.
    for (const [index, dsn] of hostile.entries()) await (await quiet.post(envelope(dsn), { "cf-connecting-ip": `192.0.2.${index + 1}` })).arrayBuffer();
    try {
      await eventually(() => quiet.logLines("tunnel").length === hostile.length);
      const all = quiet.logs.join("\n");
      expect(all).not.toContain("FORGED");
      expect(all).not.toContain("\u001b");
      const ours = quiet.logs.filter((line) => line.trim() !== "" && !line.startsWith('{"event":"tunnel_start"'));
      expect(ours.map((line) => JSON.parse(line))).toEqual(quiet.logLines("tunnel"));
      for (const line of quiet.logLines("tunnel")) expect(line).toMatchObject({ event: "tunnel", outcome: "rejected" });
    } finally {
      await quiet.dispose();
    }
  });
});

describe("bounded work before the verdict: decompression bombs", () => {
  const { ingest, worker } = useIngestAndWorker({}, { rateLimit: { limit: 1_000_000, period: 10 } });

  /** Sends 4 rounds of these bodies, 8 at a time; returns every refusal's reason and how far workerd's peak RSS rose. */
  async function refuseConcurrently(bodies: { body: Buffer; headers: Record<string, string> }[]) {
    const before = peakRss(worker.pid);
    const reasons = new Set<string>();
    for (let round = 0; round < 4; round += 1) {
      await Promise.all(
        bodies.map(async ({ body, headers }) => {
          const response = await worker.fetch(APP_TUNNEL, { method: "POST", body: new Uint8Array(body), headers });
          reasons.add(((await response.json()) as { reason: string }).reason);
        }),
      );
    }
    return { reasons, growth: peakRss(worker.pid) - before };
  }

  it("refuses concurrent bombs holding no more memory than plain bodies of the same size", async () => {
    // 60 MiB of spaces (no newline) is 61 KB gzipped: under the 64 KiB that is read whole.
    const gzip = gzipSync(Buffer.alloc(60 * MiB, 0x20), { level: 9 });
    const deflate = deflateSync(Buffer.alloc(60 * MiB, 0x20), { level: 9 });
    // 250 MiB is some 250 KB gzipped: read as a stream, in the chunks it arrives in.
    const large = gzipSync(Buffer.alloc(250 * MiB, 0x20), { level: 9 });
    expect(gzip.length).toBeLessThan(64 * 1024);
    expect(large.length).toBeGreaterThan(64 * 1024);
    const bombs = [gzip, deflate, large, gzip, deflate, large, gzip, gzip].map((body) => ({
      body,
      headers: { "content-encoding": body === deflate ? "deflate" : "gzip" },
    }));
    // The control: the same sizes, not compressed, no newline either.
    const plain = bombs.map(({ body }) => ({ body: Buffer.alloc(body.length, 0x20), headers: {} }));

    // Warm up, so that the baseline holds what any request costs.
    for (let round = 0; round < 20; round += 1) await (await worker.fetch(APP_TUNNEL, { method: "POST", body: new Uint8Array(envelope()) })).arrayBuffer();
    ingest.reset();

    const control = await refuseConcurrently(plain);
    const attack = await refuseConcurrently(bombs);
    console.log(
      `bombs: workerd peak RSS rose ${(control.growth / MiB).toFixed(1)} MiB for 32 plain bodies, then ` +
        `${(attack.growth / MiB).toFixed(1)} MiB more for 32 bombs of 60 and 250 MiB, 8 at a time`,
    );
    // Plain bodies under 64 KiB end before 64 KiB of line: the line is all spaces, not JSON.
    expect(control.reasons).toEqual(new Set(["header_too_long", "header_not_json"]));
    expect(attack.reasons).toEqual(new Set(["header_too_long"]));
    // Before bounded inflating, 8 bombs at once took workerd up by some 200 MB: past a Worker's 128 MB.
    expect(attack.growth).toBeLessThan(24 * MiB);
    expect(ingest.arrivals).toBe(0);
  });
});

/** A client that stalls its body on a real connection, with the length it declared. */
describe("a stalled upload, over a socket", () => {
  const { ingest, worker } = useIngestAndWorker({ TUNNEL_TIMEOUT_MS: "1500" }, { spool: false });
  beforeEach(() => ingest.reset());

  it("answers 408 to a client whose body stalls, and delivers nothing of it", async () => {
    for (const size of [2_000, 300_000]) {
      const { body } = buildEnvelope({ attachmentBytes: size });
      const { status } = await stalledUpload(new URL(APP_TUNNEL, worker.origin), body.subarray(0, Math.floor(body.length / 2)), {
        "content-length": String(body.length),
      });
      expect(status, `${size} bytes`).toBe(408);
    }
    await ingest.settled();
    expect(ingest.deliveries).toHaveLength(0);
  });
});
