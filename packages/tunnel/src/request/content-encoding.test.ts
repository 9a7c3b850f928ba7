import { describe, expect, it } from "vitest";

import { contentEncodingOf } from "./content-encoding.ts";

describe("contentEncodingOf", () => {
  it.each([
    [null, "identity"],
    ["identity", "identity"],
    ["gzip", "gzip"],
    [" GZIP ", "gzip"],
    ["deflate", "deflate"],
    ["br", undefined],
    ["gzip, gzip", undefined],
    ["compress", undefined],
    ["zstd", undefined],
  ])("reads %j as %j", (value, expected) => {
    const headers = new Headers();
    if (value !== null) headers.set("content-encoding", value);
    expect(contentEncodingOf(headers)).toBe(expected);
  });
});
