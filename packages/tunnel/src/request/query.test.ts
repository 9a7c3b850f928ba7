import { describe, expect, it } from "vitest";

import { parseTunnelQuery } from "./query.ts";

const parse = (search: string) => parseTunnelQuery(new URLSearchParams(search));

describe("parseTunnelQuery", () => {
  it.each([
    ["o=1&p=2&r=us", { org: "1", project: "2", region: "us" }],
    ["o=1&p=2", { org: "1", project: "2", region: undefined }],
    ["p=2", { org: undefined, project: "2", region: undefined }],
    ["p=2&o=1&r=de", { org: "1", project: "2", region: "de" }],
  ])("reads %s", (search, expected) => {
    expect(parse(search)).toEqual(expected);
  });

  it.each([
    ["no project", "o=1"],
    ["an empty project", "o=1&p="],
    ["letters in the org", "o=1a&p=2"],
    ["a negative org", "o=-1&p=2"],
    ["a host in the org", "o=1.evil.example&p=2"],
    ["a path in the project", "o=1&p=2/../../x"],
    ["an encoded slash in the project", "o=1&p=2%2F..%2Fx"],
    ["a long region", "o=1&p=2&r=usa"],
    ["a capital region", "o=1&p=2&r=US"],
    ["a dotted region", "o=1&p=2&r=u."],
    ["a host in the region", "o=1&p=2&r=evil.example%23"],
    ["a repeated key", "o=1&p=2&p=3"],
    ["an unknown key", "o=1&p=2&redirect=https://evil.example"],
    ["an absurdly long number", `o=${"9".repeat(21)}&p=2`],
  ])("refuses %s", (_name, search) => {
    expect(parse(search)).toBeUndefined();
  });
});
