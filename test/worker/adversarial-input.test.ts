import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { deflateSync, gzipSync } from "node:zlib";

import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";

import { buildEnvelope } from "../support/envelopes";
import { eventually } from "../support/eventually";
import { stalledUpload } from "../support/http";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { peakRss } from "../support/process-memory";
import { APP_TUNNEL, APP_DSN, startWorker, type RunningWorker } from "../support/worker";

/**
 * The tunnel attacked as an adversary would, one class of attack per block: every test here failed
 * against the tunnel before it was hardened.
 */

const TIMEOUT_MS = 1_500;
/** What the runtime and loopback may add to the deadline before the client has its answer. */
const SLACK_MS = 1_000;
const PARTNER = "https://partner.example.com";
const MiB = 1024 * 1024;

const envelope = (dsn?: string, items?: string) => buildEnvelope({ dsn, items }).body;

interface Answer {
  status: number;
  reason: string | undefined;
  elapsedMs: number;
}

/**
 * Sends `first`, then stalls: the body never ends. With `declaredLength` the request says how long
 * the body is; without, it is chunked. Resolves with the answer and how long it took to come.
 */
async function stalledEnvelope(worker: RunningWorker, first: Buffer, declaredLength?: number): Promise<Answer> {
  const headers: Record<string, string> = declaredLength === undefined ? {} : { "content-length": String(declaredLength) };
  const { status, body, elapsedMs } = await stalledUpload(new URL(`${worker.origin}${APP_TUNNEL}`), first, headers);
  const text = body.toString("utf8");
  return { status, reason: text.startsWith("{") ? (JSON.parse(text) as { reason?: string }).reason : undefined, elapsedMs };
}

/** Reads the whole answer, then closes the request, whose body may still be unsent. */
function answerOf(request: ClientRequest, incoming: IncomingMessage, started: number): Promise<Answer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      request.destroy();
      const text = Buffer.concat(chunks).toString("utf8");
      const reason = text.startsWith("{") ? (JSON.parse(text) as { reason?: string }).reason : undefined;
      resolve({ status: incoming.statusCode ?? 0, reason, elapsedMs: Date.now() - started });
    });
  });
}

describe("the tunnel under attack, in workerd", () => {
  const { ingest, worker } = useIngestAndWorker(
    { TUNNEL_ALLOWED_ORIGINS: PARTNER, TUNNEL_TIMEOUT_MS: String(TIMEOUT_MS) },
    { rateLimit: { limit: 1_000_000, period: 10 } },
  );
  beforeEach(() => ingest.reset());

  describe("one deadline, every phase", () => {
    it.each([
      ["chunked, before the first byte", Buffer.alloc(0), undefined],
      ["chunked, inside the header line", envelope().subarray(0, 20), undefined],
      ["chunked, after forwarding began", Buffer.concat([envelope(), Buffer.alloc(200_000, 0x61)]), undefined],
      ["with a length, inside the header line", envelope().subarray(0, 20), 2 * MiB],
      ["with a length, after forwarding began", Buffer.concat([envelope(), Buffer.alloc(200_000, 0x61)]), 2 * MiB],
      ["small, with a length", envelope().subarray(0, 30), 2_000],
    ])("answers a body that stalls %s with 408 within the deadline, and delivers nothing", async (_name, first, length) => {
      const answer = await stalledEnvelope(worker, first, length);
      expect(answer).toMatchObject({ status: 408, reason: "body_timeout" });
      expect(answer.elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(answer.elapsedMs).toBeLessThan(TIMEOUT_MS + SLACK_MS);
      expect(ingest.deliveries).toHaveLength(0);
    });
  });

  describe("the DSN must be exactly an allowed DSN", () => {
    it.each([
      ["text after the project id", envelope(`${APP_DSN}abc`), "dsn_invalid"],
      ["a query after the project id", envelope(`${APP_DSN}?x=1`), "dsn_invalid"],
      ["a fragment after the project id", envelope(`${APP_DSN}#x`), "dsn_invalid"],
      ["a port", envelope(APP_DSN.replace("sentry.io/", "sentry.io:443/")), "dsn_not_allowed"],
      ["a legacy secret and a port", envelope(APP_DSN.replace("@", ":secret@").replace("sentry.io/", "sentry.io:443/")), "dsn_not_allowed"],
      ["a legacy secret and another case", envelope(APP_DSN.replace("@", ":secret@").replace("ingest", "INGEST")), "dsn_not_allowed"],
      [
        "two dsn keys",
        Buffer.from(`{"dsn":"https://0123456789abcdef0123456789abcdef@evil.example/4502","dsn":"${APP_DSN}"}\n{"type":"event"}\n{}\n`),
        "header_repeated_key",
      ],
    ])("refuses %s, and Sentry is never called", async (_name, body, reason) => {
      const response = await worker.post(body);
      expect(await response.json()).toMatchObject({ reason });
      expect(ingest.arrivals).toBe(0);
    });
  });

  describe("logs hold only the tunnel's own lines", () => {
    it("never writes request text to the log, whatever the DSN holds", async () => {
      // A Worker of its own, so that no other test's line arrives while these are counted.
      const quiet = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin });
      const forged = '{"event":"tunnel","outcome":"forwarded","reason":null,"status":200,"org":"FORGED"}';
      const hostile = [
        `https://x@o4501.ingest.us.sentry.io/4502\n${forged}`,
        `https://\n${forged}\n@`,
        `http://[::1\n${forged}`,
        `https://0123456789abcdef0123456789abcdef@o4501.ingest.us.sentry.io/\u001b[2J\u001b]0;FORGED\u0007`,
        `https://FORGED-${"a".repeat(3000)}`,
      ];
      for (const dsn of hostile) await (await quiet.post(envelope(dsn))).arrayBuffer();
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

  describe("CORS for allowed partner origins only", () => {
    it("answers a partner's preflight, and lets it read Sentry's 429 and Retry-After", async () => {
      const preflight = await worker.fetch(APP_TUNNEL, {
        method: "OPTIONS",
        headers: { origin: PARTNER, "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin")).toBe(PARTNER);
      expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");

      ingest.respondWith((_request, response) => {
        // A category the other tests here send none of, since the tunnel remembers the limit.
        response.writeHead(429, { "retry-after": "60", "x-sentry-rate-limits": "60:transaction:organization" });
        response.end();
      });
      const limited = await worker.post(envelope(), { origin: PARTNER });
      expect(limited.status).toBe(429);
      expect(limited.headers.get("access-control-allow-origin")).toBe(PARTNER);
      expect(limited.headers.get("access-control-expose-headers")).toBe("Retry-After, X-Sentry-Rate-Limits");
      expect(limited.headers.get("vary")).toBe("Origin");
    });

    it("gives any other origin no CORS header at all", async () => {
      for (const response of [
        await worker.fetch(APP_TUNNEL, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } }),
        await worker.post(envelope(), { origin: "https://evil.example" }),
        await worker.post(envelope(), { origin: worker.origin }),
      ]) {
        expect([...response.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
      }
    });
  });

  describe("Sentry's answer, bounded and inert", () => {
    it("serves an HTML answer as plain text, never sniffed", async () => {
      ingest.respondWith((_request, response) => {
        response.writeHead(403, { "content-type": "text/html; charset=utf-8" });
        response.end("<html><script>alert(document.cookie)</script></html>");
      });
      const response = await worker.post(envelope());
      expect(response.status).toBe(403);
      expect(response.headers.get("content-type")).toBe("text/plain; charset=utf-8");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    });

    it("reads no more than 64 KiB of an answer, and keeps its status", async () => {
      let written = 0;
      ingest.respondWith((_request, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        // 8 MiB in 64 KiB writes, for as long as the tunnel keeps reading.
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (written < 8 * MiB) {
            written += chunk.length;
            if (!response.write(chunk)) return void response.once("drain", pump);
          }
          response.end();
        };
        pump();
      });
      const response = await worker.post(envelope());
      expect(response.status).toBe(200);
      expect(await response.text()).toBe("");
      expect(written).toBeLessThan(8 * MiB);
    });
  });

  describe("client hints by exact name", () => {
    it("forwards the three client hints and no other sec-ch-ua header", async () => {
      await worker.post(envelope(), {
        "sec-ch-ua": '"Chromium";v="156"',
        "sec-ch-ua-mobile": "?0",
        "sec-ch-ua-platform": '"Linux"',
        "sec-ch-ua-full-version-list": '"Chromium";v="156.0.8078.73"',
        "sec-ch-ua-smuggled": "x",
      });
      const forwarded = Object.keys(ingest.deliveries[0]!.headers).filter((name) => name.startsWith("sec-ch-ua"));
      expect(forwarded.sort()).toEqual(["sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform"]);
    });
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

describe("a property: whatever arrives, the tunnel answers in time and forwards only what it accepts", () => {
  const timeoutMs = 800;
  const { ingest, worker } = useIngestAndWorker({ TUNNEL_TIMEOUT_MS: String(timeoutMs) }, { rateLimit: { limit: 1_000_000, period: 10 } });

  const valid = envelope();
  const bombs = [gzipSync(Buffer.alloc(60 * MiB, 0x20), { level: 9 }), deflateSync(Buffer.alloc(100 * MiB), { level: 9 })];
  const plain = fc.oneof(
    fc.constant(valid),
    fc.uint8Array({ maxLength: 3_000 }).map((bytes) => Buffer.from(bytes)),
    fc.nat(valid.length).map((end) => valid.subarray(0, end)),
    fc.integer({ min: 1, max: 400_000 }).map((size) => Buffer.concat([valid, Buffer.alloc(size, 0x61)])),
    fc.jsonValue().map((header) => Buffer.from(`${JSON.stringify(header)}\n{}\n`)),
  );
  const encoded = fc.oneof(
    fc.tuple(plain, fc.constantFrom("identity", "gzip", "deflate", "lie-gzip")).map(([body, encoding]) => {
      if (encoding === "gzip") return { body: gzipSync(body), encoding };
      if (encoding === "deflate") return { body: deflateSync(body), encoding };
      // Says gzip, is not.
      if (encoding === "lie-gzip") return { body, encoding: "gzip" };
      return { body, encoding };
    }),
    fc.constantFrom(...bombs).map((body) => ({ body, encoding: body === bombs[0] ? "gzip" : "deflate" })),
  );
  const delivery = fc.record({
    chunk: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1_000, max: 100_000 })),
    /** Stop sending after this many chunks, and never end the body. */
    stallAfter: fc.oneof({ arbitrary: fc.constant(null), weight: 5 }, { arbitrary: fc.nat(5), weight: 1 }),
    declared: fc.oneof(
      { arbitrary: fc.constant("honest" as const), weight: 5 },
      { arbitrary: fc.constant("none" as const), weight: 3 },
      { arbitrary: fc.constantFrom("short" as const, "long" as const), weight: 1 },
    ),
  });

  it("answers within the deadline, holds bounded memory, and never forwards a refused envelope", async () => {
    const before = peakRss(worker.pid);
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(encoded, delivery, async ({ body, encoding }, { chunk, stallAfter, declared }) => {
        runs += 1;
        const deliveredBefore = ingest.deliveries.length;
        const length = { honest: body.length, none: undefined, short: Math.max(0, body.length - 7), long: body.length + 7 }[declared];
        const answer = await sendInChunks(worker, body, { encoding, chunk, stallAfter, length });
        expect(answer.elapsedMs).toBeLessThan(timeoutMs + SLACK_MS);
        expect(answer.status).toBeLessThan(500);
        if (answer.status !== 200) {
          // A refused envelope is never delivered whole; give a forward already under way time to show.
          await ingest.settled();
          expect(ingest.deliveries.length).toBe(deliveredBefore);
        } else {
          // Accepted only once the client ended its body: exactly what it sent arrives.
          expect(answer.sent).toBeDefined();
          await eventually(() => ingest.deliveries.length === deliveredBefore + 1);
          expect(ingest.deliveries.at(-1)!.body.equals(answer.sent!)).toBe(true);
        }
      }),
      { numRuns: 80 },
    );
    const growth = peakRss(worker.pid) - before;
    console.log(`property: ${runs} runs, workerd peak RSS grew ${(growth / MiB).toFixed(1)} MiB`);
    // Garbage not yet collected counts too; what matters is staying far from a Worker's 128 MB.
    expect(growth).toBeLessThan(96 * MiB);
  });
});

interface ChunkedSend {
  encoding: string;
  chunk: number;
  stallAfter: number | null;
  length: number | undefined;
}

/** Sends `body` in chunks of `chunk` bytes, stalling after `stallAfter` of them if set, and times the answer. */
function sendInChunks(
  worker: RunningWorker,
  body: Buffer,
  { encoding, chunk: asked, stallAfter, length }: ChunkedSend,
): Promise<Answer & { sent: Buffer | undefined }> {
  // At most 2,000 writes, so that a tiny chunk size on a large body stays quick.
  const chunk = Math.max(asked, Math.ceil(body.length / 2_000));
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "content-encoding": encoding };
    if (length !== undefined) headers["content-length"] = String(length);
    const request = httpRequest(new URL(`${worker.origin}${APP_TUNNEL}`), { method: "POST", headers, agent: false });
    let answered = false;
    request.on("error", (error: NodeJS.ErrnoException) => {
      if (answered) return;
      // The tunnel refused before reading the whole body, and workerd closed the connection under
      // the client's writes: the kernel's reset can overtake the answer. Status 0: refused, unread.
      if (error.code === "ECONNRESET" || error.code === "EPIPE") {
        answered = true;
        resolve({ status: 0, reason: undefined, elapsedMs: Date.now() - started, sent: undefined });
      } else {
        reject(error);
      }
    });
    request.on("response", (incoming) => {
      answered = true;
      void answerOf(request, incoming, started).then((answer) => resolve({ ...answer, sent: complete() ? sendable : undefined }));
    });
    let ended = false;
    /** The server has had the whole body: ended, or every declared byte sent. */
    const complete = () => ended || (length !== undefined && length <= sendable.length && offset >= sendable.length);
    // A body that is longer than declared is cut by Node at the declared length: send only that much.
    const sendable = length === undefined ? body : body.subarray(0, Math.min(length, body.length));
    let offset = 0;
    let sent = 0;
    const next = () => {
      if (answered) return;
      if (stallAfter !== null && sent === stallAfter) return;
      if (offset >= sendable.length) {
        // A body shorter than declared stalls too: the client waits for the rest it promised.
        if (length === undefined || length <= sendable.length) {
          ended = true;
          request.end();
        }
        return;
      }
      const part = sendable.subarray(offset, offset + chunk);
      offset += part.length;
      sent += 1;
      request.write(part, next);
    };
    // The request line and headers go out at once, even when no byte of the body follows.
    request.flushHeaders();
    next();
  });
}

/** A client that stalls its body, and a Sentry that stalls its answer, against the live path's deadline. */
describe("stalls on either side, in workerd", () => {
  const { ingest, worker } = useIngestAndWorker({ TUNNEL_TIMEOUT_MS: "1500" }, { spool: false });
  beforeEach(() => ingest.reset());
  const envelope = (size: number) => buildEnvelope({ attachmentBytes: size });
  it("answers 408 to a client whose body stalls, and delivers nothing of it", async () => {
    for (const size of [2_000, 300_000]) {
      const { body } = envelope(size);
      const { status } = await stalledUpload(new URL(APP_TUNNEL, worker.origin), body.subarray(0, Math.floor(body.length / 2)), {
        "content-length": String(body.length),
      });
      expect(status, `${size} bytes`).toBe(408);
    }
    await ingest.settled();
    expect(ingest.deliveries).toHaveLength(0);
  });

  it("answers 504 when Sentry's answer stalls mid-body", async () => {
    ingest.respondWith((_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      response.write('{"id":');
    });
    const response = await worker.post(envelope(100).body, {});
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ reason: "upstream_timeout" });
  });
});

describe("fuzzing the tunnel through workerd", () => {
  const { ingest, worker } = useIngestAndWorker({}, { rateLimit: { limit: 1_000_000, period: 10 } });

  const valid = buildEnvelope().body;

  const bodies = fc.oneof(
    fc.uint8Array({ maxLength: 2_000 }).map((bytes) => Buffer.from(bytes)),
    fc.nat(valid.length).map((end) => valid.subarray(0, end)),
    fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })).map(([at, byte]) => {
      const mutated = Buffer.from(valid);
      mutated[at] = byte;
      return mutated;
    }),
    fc.jsonValue().map((header) => Buffer.from(`${JSON.stringify(header)}\n{}\n`)),
    {
      // The allowed header line, then anything: accepted, since only the header line is read.
      arbitrary: fc.uint8Array({ maxLength: 2_000 }).map((rest) => Buffer.concat([valid.subarray(0, valid.indexOf(0x0a) + 1), rest])),
      weight: 3,
    },
  );
  const queries = fc.oneof(
    { arbitrary: fc.constant(APP_TUNNEL.slice("/monitoring".length)), weight: 3 },
    fc.dictionary(fc.constantFrom("o", "p", "r", "x", "url", "o[]"), fc.string({ maxLength: 40 })).map((pairs) => `?${new URLSearchParams(pairs)}`),
    fc.string({ maxLength: 3_000 }).map((text) => `?${encodeURIComponent(text)}`),
    fc.constant(`?o=4501&p=${"9".repeat(4_000)}`),
  );
  const headers = fc.record(
    {
      "content-encoding": fc.constantFrom("gzip", "deflate", "br", "identity", "gzip, gzip", "x-gzip", "", "GZIP"),
      // "self": the Worker's own origin, as the app's pages send.
      origin: fc.constantFrom("https://evil.example", "null", "http://localhost:8787", "self"),
      "content-type": fc.constantFrom("text/plain;charset=UTF-8", "application/json", "multipart/form-data; boundary=x"),
    },
    { requiredKeys: [] },
  );

  it("answers bad input with a 4xx, never a 5xx, never calls Sentry for it, and never crashes; delivers what it accepts as sent", async () => {
    let runs = 0;
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(bodies, queries, headers, fc.constantFrom("POST", "POST", "PUT", "GET"), async (body, query, sentHeaders, method) => {
        runs += 1;
        const before = ingest.arrivals;
        const response = await worker.fetch(`/monitoring${query}`, {
          method,
          headers: sentHeaders.origin === "self" ? { ...sentHeaders, origin: worker.origin } : sentHeaders,
          ...(method === "GET" ? {} : { body: new Uint8Array(body) }),
        });
        const text = await response.text();
        expect(response.status).toBeLessThan(500);
        if (response.status >= 400) {
          expect(JSON.parse(text)).toMatchObject({ reason: expect.any(String), error: expect.any(String) });
          expect(ingest.arrivals).toBe(before);
        } else {
          // Only a well-formed envelope for an allowed DSN gets this far, and it arrives whole, as sent.
          accepted += 1;
          const sent = Buffer.from(body);
          await eventually(() => ingest.deliveries.some((delivery) => delivery.body.equals(sent)));
        }
      }),
      {
        numRuns: 400,
        // Accepted requests, so that "as sent" is checked every run: the allowed header line, then anything.
        examples: Array.from({ length: 12 }, (_, index) => [
          Buffer.concat([valid.subarray(0, valid.indexOf(0x0a) + 1), Buffer.alloc(index * 97, index)]),
          APP_TUNNEL.slice("/monitoring".length),
          index % 2 === 0 ? {} : { origin: "self" as const, "content-encoding": "identity" as const },
          "POST",
        ]),
      },
    );
    console.log(`fuzz runs: ${runs}, accepted: ${accepted}`);
    expect(accepted).toBeGreaterThanOrEqual(12);
    expect(worker.logs.join("\n")).not.toMatch(/Uncaught|internal_error/);
  });
});
