import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";

import { parseDsn } from "./dsn.ts";

const KEY = "0123456789abcdef0123456789abcdef";

describe("parseDsn", () => {
  it.each([
    [`https://${KEY}@o1.ingest.us.sentry.io/2`, { host: "o1.ingest.us.sentry.io", port: "", path: "", projectId: "2" }],
    [`http://${KEY}@sentry.internal:9000/a/b/77`, { protocol: "http", port: "9000", path: "a/b/", projectId: "77" }],
    [`https://${KEY}@[2001:db8::1]:8443/5`, { host: "[2001:db8::1]", port: "8443", projectId: "5" }],
  ])("reads %s", (text, parts) => {
    expect(parseDsn(text)).toMatchObject({ ...parts, publicKey: KEY, text });
  });

  it("drops the legacy secret from the text an envelope must carry, as the SDK does", () => {
    expect(parseDsn(`https://${KEY}:s3cret@sentry.example.com/7`)?.text).toBe(`https://${KEY}@sentry.example.com/7`);
  });

  it.each([
    ["text after the project id", `https://${KEY}@o1.ingest.us.sentry.io/2abc`],
    ["a query", `https://${KEY}@o1.ingest.us.sentry.io/2?x=1`],
    ["a fragment", `https://${KEY}@o1.ingest.us.sentry.io/2#x`],
    ["a trailing slash", `https://${KEY}@o1.ingest.us.sentry.io/2/`],
    ["no key", "https://o1.ingest.us.sentry.io/2"],
    ["no project", `https://${KEY}@o1.ingest.us.sentry.io/`],
    ["another scheme", `ftp://${KEY}@o1.ingest.us.sentry.io/2`],
    ["a newline", `https://${KEY}@o1.ingest.us.sentry.io/2\n{"event":"tunnel"}`],
    ["an escape sequence", `https://${KEY}@o1.ingest.us.sentry.io/\u001b[2J2`],
    ["user info in the host", `https://${KEY}@evil.example@o1.ingest.us.sentry.io/2`],
    ["a very long path", `https://${KEY}@o1.ingest.us.sentry.io/${"a/".repeat(2000)}2`],
  ])("refuses %s", (_name, text) => {
    expect(parseDsn(text)).toBeUndefined();
  });

  describe("writes nothing to the console, whatever it is given", () => {
    afterEach(() => vi.restoreAllMocks());
    it("for any string", () => {
      const spies = (["log", "error", "warn", "info", "debug"] as const).map((name) => vi.spyOn(console, name));
      fc.assert(
        fc.property(fc.oneof(fc.string(), fc.string().map((tail) => `https://${KEY}@o1.ingest.sentry.io/${tail}`)), (text) => {
          parseDsn(text);
        }),
        { numRuns: 500 },
      );
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    });
  });
});
