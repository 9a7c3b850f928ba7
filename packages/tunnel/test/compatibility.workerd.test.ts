import { gzipSync } from "node:zlib";

import {
  createAttachmentEnvelopeItem,
  createCheckInEnvelope,
  createClientReportEnvelope,
  createEnvelope,
  createEventEnvelope,
  createSessionEnvelope,
  createTransport,
  dsnFromString,
  makeMultiplexedTransport,
  makeSession,
  serializeEnvelope,
  type DsnComponents,
  type Envelope,
  type Event,
  type Transport,
} from "@sentry/core";
import { beforeEach, describe, expect, it } from "vitest";

import type { LogLine } from "../src/index.ts";
import { answerOf, tunnelFromEnv } from "./support/test-settings.ts";
import { EVERY_CLIENT, OTHER_TEST_DSN, StubSentry, TEST_DSN, TEST_TUNNEL } from "./support/test-harness.ts";

/**
 * Every envelope a Sentry SDK sends, and the edge cases Relay's own envelope parser accepts,
 * through the tunnel in workerd (Cloudflare's vitest integration): each must reach Sentry byte
 * for byte. Beside them, the deliberate refusals, each with its documented reason. Written in our
 * own words from Relay's envelope tests and the envelope builders of `@sentry/core`. Sentry is a
 * stub `fetch` that keeps what it was sent; no socket is opened.
 */

const LEGACY_DSN = "https://abcdefabcdefabcdefabcdefabcdefab:legacysecret@sentry.example.com/77";
const app = dsnFromString(TEST_DSN) as DsnComponents;

const bytes = (envelope: Envelope): Buffer => {
  const serialized = serializeEnvelope(envelope);
  return typeof serialized === "string" ? Buffer.from(serialized) : Buffer.from(serialized);
};

/** An event with text in several scripts, as real messages and stack frames carry. */
const event = (extra: Partial<Event> = {}): Event => ({
  event_id: "a1".repeat(16),
  message: "Zürich — 東京 — emoji 🚀 — \u2028 line separator",
  exception: { values: [{ type: "TypeError", value: "Cannot read ‘x’", stacktrace: { frames: [{ filename: "app:///é.js", lineno: 1 }] } }] },
  ...extra,
});

/** The SDK kinds: built by `@sentry/core` itself where it exports a builder, by hand as it writes them otherwise. */
const sdkEnvelopes: [string, () => Buffer][] = [
  ["an error event", () => bytes(createEventEnvelope(event(), app, undefined, TEST_TUNNEL))],
  [
    "a transaction with a non-ASCII trace context",
    () =>
      bytes(
        createEventEnvelope(
          {
            ...event({ type: "transaction", transaction: "GET /café/東京", spans: [] }),
            sdkProcessingMetadata: { dynamicSamplingContext: { trace_id: "b".repeat(32), public_key: app.publicKey, transaction: "GET /café/東京" } },
          },
          app,
          undefined,
          TEST_TUNNEL,
        ),
      ),
  ],
  ["a session", () => bytes(createSessionEnvelope(makeSession({ release: "1.0", environment: "production" }), app, undefined, TEST_TUNNEL))],
  ["a client report", () => bytes(createClientReportEnvelope([{ reason: "ratelimit_backoff", category: "error", quantity: 3 }], TEST_DSN, 1_800_000_000))],
  [
    "a check-in",
    () => bytes(createCheckInEnvelope({ check_in_id: "c".repeat(32), monitor_slug: "nightly", status: "ok" }, undefined, undefined, TEST_TUNNEL, app)),
  ],
  [
    "logs",
    () =>
      bytes(
        createEnvelope({ dsn: TEST_DSN }, [
          [
            { type: "log", item_count: 2, content_type: "application/vnd.sentry.items.log+json" },
            { items: [{ timestamp: 1_800_000_000, level: "info", body: "héllo", trace_id: "d".repeat(32) }, { timestamp: 1_800_000_001, level: "warn", body: "2" }] },
          ],
        ] as never),
      ),
  ],
  [
    "a replay: its event and a compressed recording",
    () => {
      const recording = Buffer.concat([Buffer.from('{"segment_id":0}\n'), gzipSync(Buffer.from(JSON.stringify([{ type: 4, data: { href: "https://app.example/" } }])))]);
      return bytes(
        createEnvelope({ dsn: TEST_DSN, event_id: "e".repeat(32) }, [
          [{ type: "replay_event" }, { type: "replay_event", replay_id: "e".repeat(32), segment_id: 0 }],
          [{ type: "replay_recording", length: recording.length }, recording],
        ] as never),
      );
    },
  ],
  [
    "user feedback with a screenshot",
    () => {
      const envelope = createEventEnvelope({ ...event(), type: "feedback", contexts: { feedback: { message: "Ça ne marche pas", contact_email: "a@b.c" } } } as Event, app, undefined, TEST_TUNNEL);
      const screenshot = createAttachmentEnvelopeItem({ data: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0a, 0x0d, 0x00, 0xff]), filename: "screenshot.png", contentType: "image/png" });
      return bytes(createEnvelope(envelope[0], [...envelope[1], screenshot] as never));
    },
  ],
  [
    "an event with binary attachments full of newlines",
    () => {
      const envelope = createEventEnvelope(event(), app, undefined, TEST_TUNNEL);
      const dump = createAttachmentEnvelopeItem({ data: new Uint8Array(Array.from({ length: 4096 }, (_, index) => (index % 3 === 0 ? 0x0a : index % 256))), filename: "dump.bin" });
      const text = createAttachmentEnvelopeItem({ data: "line one\nline two\r\n", filename: "log.txt" });
      return bytes(createEnvelope(envelope[0], [...envelope[1], dump, text] as never));
    },
  ],
];

const header = `{"dsn":"${TEST_DSN}"}`;
/** Relay's accepted edge cases, in our own words. */
const relayEdgeCases: [string, Buffer][] = [
  ["a header alone, without a newline", Buffer.from(header)],
  ["a header alone, with its newline", Buffer.from(`${header}\n`)],
  ["items without a trailing newline", Buffer.from(`${header}\n{"type":"event"}\n{"message":"x"}`)],
  ["an item of implicit length followed by one of explicit length", Buffer.from(`${header}\n{"type":"event"}\n{}\n{"type":"attachment","length":3}\nabc\n`)],
  ["an empty item of length 0", Buffer.from(`${header}\n{"type":"attachment","length":0}\n\n`)],
  ["an item header with no payload line at the end", Buffer.from(`${header}\n{"type":"attachment","length":0}`)],
  ["a byte-order mark before the header", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${header}\n{"type":"event"}\n{}\n`)])],
  ["CRLF inside a payload of explicit length", Buffer.from(`${header}\n{"type":"attachment","length":6}\na\r\nb\r\n\n`)],
  ["spaces after the header's JSON", Buffer.from(`${header}   \n{"type":"event"}\n{}\n`)],
  ["item types Relay does not know yet", Buffer.from(`${header}\n{"type":"future_thing","x":1}\n{}\n`)],
  ["a header with many other fields, nested", Buffer.from(`{"event_id":"${"f".repeat(32)}","sent_at":"2026-11-22T10:00:00.000Z","dsn":"${TEST_DSN}","sdk":{"name":"sentry.javascript.remix","version":"10.75.2","integrations":["a","b"]},"trace":{"trace_id":"${"0".repeat(32)}","public_key":"k","sample_rate":"1","sampled":"true","transaction":"GET /ü"}}\n{"type":"event"}\n{}\n`)],
  ["a header just under 64 KiB", Buffer.from(`{"dsn":"${TEST_DSN}","pad":"${"x".repeat(64 * 1024 - 200)}"}\n{"type":"event"}\n{}\n`)],
];

describe("compatibility: what Sentry's SDKs send, and what Relay accepts", () => {
  const lines: LogLine[] = [];
  const sentry = new StubSentry();
  /** What reached Sentry: the path and query of its URL, the body and the headers. */
  const delivered = () => sentry.took.map(({ url, body, headers }) => ({ url: `${new URL(url).pathname}${new URL(url).search}`, body: Buffer.from(body), headers }));
  // Every envelope's line, those Sentry took included: a test reads which project each was for.
  const tunnel = tunnelFromEnv(
    { SENTRY_DSN: TEST_DSN, TUNNEL_ALLOWED_DSNS: `${OTHER_TEST_DSN},${LEGACY_DSN}`, TUNNEL_LOG_FORWARDED: "on", TUNNEL_RATE_LIMITER: EVERY_CLIENT },
    { fetch: sentry.fetch, log: (line) => void lines.push(line) },
  );
  // A whole body with its length declared, as SDKs send it; a stream's is given by the test.
  const post = (body: Buffer | ReadableStream<Uint8Array>, headers: Record<string, string> = {}, path = TEST_TUNNEL) => {
    const declared = body instanceof ReadableStream ? {} : { "content-length": String(body.length) };
    const sent = body instanceof ReadableStream ? body : new Uint8Array(body);
    return answerOf(tunnel, new Request(`https://app.example${path}`, { method: "POST", body: sent, headers: { ...declared, ...headers } }));
  };
  beforeEach(() => {
    sentry.took.length = 0;
    lines.length = 0;
  });

  async function forwardedAsSent(body: Buffer, headers: Record<string, string> = {}): Promise<void> {
    const response = await post(body, headers);
    expect(response.status).toBe(200);
    expect(delivered()).toHaveLength(1);
    expect(delivered()[0]!.body.equals(body)).toBe(true);
  }

  it.each(sdkEnvelopes)("forwards %s byte for byte", async (_name, build) => {
    await forwardedAsSent(build());
  });

  it.each(relayEdgeCases)("forwards %s byte for byte", async (_name, body) => {
    await forwardedAsSent(body);
  });

  it("forwards a header split across chunks inside a UTF-8 character, streamed", async () => {
    // Over 64 KiB, so that it streams rather than being read whole.
    const body = Buffer.from(`{"dsn":"${TEST_DSN}","sdk":{"name":"é東🚀"}}\n{"type":"attachment","length":70000}\n${"y".repeat(70_000)}\n`);
    const split = body.indexOf(Buffer.from("東")) + 1;
    const stream = new ReadableStream<Uint8Array<ArrayBuffer>>({
      start(controller) {
        controller.enqueue(new Uint8Array(body.subarray(0, split)));
        controller.enqueue(new Uint8Array(body.subarray(split)));
        controller.close();
      },
    });
    const response = await post(stream, { "content-length": String(body.length) });
    expect(response.status).toBe(200);
    expect(delivered()[0]!.body.equals(body)).toBe(true);
  });

  it("forwards a DSN allow-listed with its legacy secret, sent verbatim by an SDK, to its own ingest", async () => {
    const body = Buffer.from(`{"dsn":"${LEGACY_DSN}"}\n{"type":"event"}\n{}\n`);
    const response = await post(body, {}, "/monitoring?p=77");
    expect(response.status).toBe(200);
    expect(delivered().map((delivery) => delivery.url)).toEqual(["/api/77/envelope/"]);
    expect(delivered()[0]!.body.equals(body)).toBe(true);
  });

  it("reads a Content-Encoding that names no coding (an old Android SDK's UTF-8) as none, as Relay does", async () => {
    const body = Buffer.from(`${header}\n{"type":"event"}\n{}\n`);
    const response = await post(body, { "content-encoding": "UTF-8" });
    expect(response.status).toBe(200);
    expect(delivered()[0]!.body.equals(body)).toBe(true);
    expect(delivered()[0]!.headers.get("content-encoding")).toBeNull();
  });

  it.each<[string, Buffer, Record<string, string>, number, string]>([
    ["a header that repeats a key (Relay takes the last)", Buffer.from(`{"dsn":"${TEST_DSN}","dsn":"${OTHER_TEST_DSN}"}\n{}\n`), {}, 400, "header_repeated_key"],
    ["a header line over 64 KiB (Relay reads further)", Buffer.from(`{"dsn":"${TEST_DSN}","pad":"${"x".repeat(70 * 1024)}"}\n{}\n`), {}, 400, "header_too_long"],
    [
      "no DSN in the header, whatever X-Sentry-Auth says (Relay authenticates with that key)",
      Buffer.from('{"event_id":"1"}\n{}\n'),
      { "x-sentry-auth": `Sentry sentry_key=${app.publicKey}` },
      400,
      "dsn_missing",
    ],
    ["brotli (Relay decodes it; workerd cannot)", Buffer.from([0x1b, 0x03, 0x00, 0xf8]), { "content-encoding": "br" }, 415, "unsupported_encoding"],
    ["a coding that is no coding over a body that is not an envelope (Relay: invalid envelope)", gzipSync(`${header}\n{}\n`), { "content-encoding": "UTF-8" }, 415, "unsupported_encoding"],
  ])("refuses %s, on purpose", async (_name, body, headers, status, reason) => {
    const response = await post(body, headers);
    expect(response.status).toBe(status);
    expect(await response.json()).toMatchObject({ reason });
    expect(delivered()).toEqual([]);
  });

  it("carries a micro-frontend's envelopes, multiplexed by the SDK through the app's one tunnel URL, to each project", async () => {
    // The SDK's own multiplexed transport, as a micro-frontend sets it up: the tunnel URL names the
    // app's project, the envelope header names the route's DSN.
    const posted: string[] = [];
    const makeTransport = (options: { url: string }): Transport =>
      createTransport({ ...options, recordDroppedEvent: () => {} } as never, async (request) => {
        posted.push(options.url);
        const response = await post(Buffer.from(typeof request.body === "string" ? request.body : request.body), {}, options.url);
        await response.arrayBuffer();
        return { statusCode: response.status, headers: { "x-sentry-rate-limits": null, "retry-after": null } };
      });
    const transport = makeMultiplexedTransport(makeTransport as never, ({ getEvent }) => {
      const team = getEvent()?.tags?.["team"];
      return team === "checkout" ? [OTHER_TEST_DSN] : [];
    })({ url: TEST_TUNNEL, tunnel: TEST_TUNNEL, recordDroppedEvent: () => {} } as never);

    await transport.send(createEventEnvelope(event({ event_id: "1".repeat(32), tags: { team: "checkout" } }), app, undefined, TEST_TUNNEL));
    await transport.send(createEventEnvelope(event({ event_id: "2".repeat(32), tags: { team: "home" } }), app, undefined, TEST_TUNNEL));

    expect(posted).toEqual([TEST_TUNNEL, TEST_TUNNEL]);
    const byProject = Object.fromEntries(delivered().map((delivery) => [delivery.url, JSON.parse(delivery.body.toString("utf8").split("\n")[0]!).dsn]));
    expect(byProject).toEqual({ "/api/4503/envelope/?hsts=0": OTHER_TEST_DSN, "/api/4502/envelope/?hsts=0": TEST_DSN });
    expect(lines.map((line) => (line.event === "tunnel" ? line.project : null)).sort()).toEqual(["4502", "4503"]);
  });
});
