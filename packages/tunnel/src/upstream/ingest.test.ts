import { describe, expect, it } from "vitest";

import { parseDsn } from "./dsn.ts";
import { projectOf, upstreamUrlFor } from "./ingest.ts";

const dsn = (text: string) => parseDsn(text)!;

describe("upstreamUrlFor", () => {
  it.each([
    ["https://k@o1.ingest.us.sentry.io/2", "https://o1.ingest.us.sentry.io/api/2/envelope/?hsts=0"],
    ["https://k@o1.ingest.de.sentry.io/2", "https://o1.ingest.de.sentry.io/api/2/envelope/?hsts=0"],
    ["https://k@o1.ingest.sentry.io/2", "https://o1.ingest.sentry.io/api/2/envelope/?hsts=0"],
    ["https://k@sentry.example.com/2", "https://sentry.example.com/api/2/envelope/"],
    ["http://k@sentry.internal:9000/prefix/deeper/2", "http://sentry.internal:9000/prefix/deeper/api/2/envelope/"],
  ])("sends %s to %s, without the key in the query", (from, to) => {
    expect(upstreamUrlFor(dsn(from))).toBe(to);
  });

  it("replaces only scheme, host and port with the development origin", () => {
    expect(upstreamUrlFor(dsn("https://k@o1.ingest.us.sentry.io/2"), "http://127.0.0.1:8969")).toBe(
      "http://127.0.0.1:8969/api/2/envelope/?hsts=0",
    );
    expect(upstreamUrlFor(dsn("https://k@sentry.example.com/base/3"), "http://localhost:9000")).toBe(
      "http://localhost:9000/base/api/3/envelope/",
    );
  });
});

describe("projectOf", () => {
  it.each([
    ["o1.ingest.us.sentry.io", { org: "1", region: "us" }],
    ["o1.ingest.sentry.io", { org: "1", region: undefined }],
    ["sentry.io", { org: undefined, region: undefined }],
    ["o1.ingest.us.sentry.io.evil.example", { org: undefined, region: undefined }],
    ["o1.ingest.usa.sentry.io", { org: undefined, region: undefined }],
    ["ox.ingest.us.sentry.io", { org: undefined, region: undefined }],
  ])("reads the host %s as %j", (host, expected) => {
    expect(projectOf(dsn(`https://k@${host}/7`))).toEqual({ ...expected, project: "7" });
  });
});
