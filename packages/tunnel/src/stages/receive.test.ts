import { gzipSync } from "node:zlib";

import { describe, expect, it } from "vitest";

import { scanCompressedHead } from "../envelope/inflate.ts";
import { receiveEnvelope } from "./receive.ts";
import { readTunnelSettings } from "../../test/support/test-settings.ts";
import { Deadline } from "../shared/deadline.ts";
import { compileAllowList } from "../upstream/allow-list.ts";
import { OTHER_TEST_DSN, TEST_DSN } from "../testing/harness.ts";

const settings = readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ALLOWED_DSNS: OTHER_TEST_DSN, TUNNEL_MAX_ENVELOPE_BYTES: "1000" });
const parts = { maxEnvelopeBytes: settings.maxEnvelopeBytes, allowList: compileAllowList(settings.allowedDsns, undefined), inflate: scanCompressedHead, readRest: undefined };
const envelope = (dsn: string) => Buffer.from(`${JSON.stringify({ dsn })}\n{"type":"event"}\n{}\n`);

async function receive(body: Uint8Array, headers: Record<string, string> = {}) {
  const request = new Request("https://app.example.com/monitoring?o=4501&p=4502&r=us", {
    method: "POST",
    body: new Uint8Array(body),
    headers: { "content-length": String(body.byteLength), ...headers },
  });
  const deadline = new Deadline(5_000);
  try {
    return await receiveEnvelope(request, deadline, parts);
  } finally {
    deadline.end();
  }
}

describe("receiveEnvelope: the header line and its DSN", () => {
  it.each([
    ["a declared length over the maximum", Buffer.alloc(1_001, 0x61), {}, "envelope_too_large"],
    ["brotli", envelope(TEST_DSN), { "content-encoding": "br" }, "unsupported_encoding"],
    ["an empty body", Buffer.alloc(0), {}, "empty_envelope"],
    ["a header line that is not JSON", Buffer.from("hello\n{}\n"), {}, "header_not_json"],
    ["a DSN not allowed", envelope("https://0123456789abcdef0123456789abcdef@o1.ingest.us.sentry.io/9"), {}, "dsn_not_allowed"],
    ["a DSN that is not one", envelope("not a dsn"), {}, "dsn_invalid"],
    ["gzip that is not", envelope(TEST_DSN), { "content-encoding": "gzip" }, "bad_compression"],
    ["a coding that is none but hides no header line", Buffer.from("\x1f\x8b\x08garbage\n"), { "content-encoding": "UTF-8" }, "unsupported_encoding"],
  ])("refuses %s", async (_, body, headers, code) => {
    const received = await receive(body, headers);
    expect(received.ok).toBe(false);
    if (!received.ok) expect(received.answer.code).toBe(code);
  });

  it("goes by the envelope's DSN: its project and ingest, whatever project the query named", async () => {
    const received = await receive(envelope(OTHER_TEST_DSN));
    expect(received).toMatchObject({ ok: true, query: { org: "4501", project: "4503", region: "us" }, bytes: envelope(OTHER_TEST_DSN).byteLength });
    if (received.ok) expect(received.envelope.upstreamUrl).toMatch(/^https:\/\/o4501\.ingest\.us\.sentry\.io\/api\/4503\/envelope\//);
  });

  it("names the allowed DSN in its canonical form, whichever spelling came", async () => {
    const received = await receive(envelope(TEST_DSN.replace("@", ":legacysecret@")));
    expect(received).toMatchObject({ ok: true, envelope: { dsn: TEST_DSN } });
  });

  it("reads through gzip, x-gzip and a coding that names none, keeping the bytes as they came", async () => {
    for (const [body, coding] of [[gzipSync(envelope(TEST_DSN)), "gzip"], [gzipSync(envelope(TEST_DSN)), "x-gzip"], [envelope(TEST_DSN), "UTF-8"]] as const) {
      const received = await receive(body, { "content-encoding": coding });
      expect(received.ok, coding).toBe(true);
      if (received.ok) expect(Buffer.concat(received.envelope.head.consumed)).toEqual(body);
    }
  });
});
