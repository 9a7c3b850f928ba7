import { describe, expect, it } from "vitest";

import { envelopeItemTypes } from "./items.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("envelopeItemTypes", () => {
  it("reads items with and without a length, binary payloads included", () => {
    const body = new Uint8Array([
      ...bytes('{"dsn":"x"}\n{"type":"event"}\n{"message":"a"}\n{"type":"attachment","length":3}\n'),
      0x0a,
      0x00,
      0xff,
      ...bytes('\n{"type":"log","length":2}\n{}\n'),
    ]);
    expect(envelopeItemTypes(body)).toEqual(["event", "attachment", "log"]);
  });

  it("says it cannot tell when an item header is not JSON or has no type", () => {
    expect(envelopeItemTypes(bytes('{"dsn":"x"}\nnot json\n{}\n'))).toBeUndefined();
    expect(envelopeItemTypes(bytes('{"dsn":"x"}\n{"length":2}\n{}\n'))).toBeUndefined();
  });

  it("finds no items in a header-only envelope", () => {
    expect(envelopeItemTypes(bytes('{"dsn":"x"}\n'))).toEqual([]);
    expect(envelopeItemTypes(bytes('{"dsn":"x"}'))).toEqual([]);
  });
});
