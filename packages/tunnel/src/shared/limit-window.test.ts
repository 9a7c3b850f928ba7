import { describe, expect, it } from "vitest";

import { LimitWindow } from "./limit-window.ts";

describe("LimitWindow", () => {
  it("remembers a refusal until the period's window ends, aligned to the period", () => {
    let now = 10_500;
    const window = new LimitWindow(10_000, () => now);
    window.refuse("203.0.113.7");
    expect(window.isRefused("203.0.113.7")).toBe(true);
    expect(window.isRefused("203.0.113.8")).toBe(false);
    now = 19_999;
    expect(window.isRefused("203.0.113.7")).toBe(true);
    now = 20_000;
    expect(window.isRefused("203.0.113.7")).toBe(false);
  });

  it("carries the bytes short of a unit to the key's next call, within the window", () => {
    let now = 0;
    const window = new LimitWindow(60_000, () => now);
    expect([100, 100, 100, 250].map((bytes) => window.unitsFor("a", bytes, 256))).toEqual([0, 0, 1, 1]);
    expect(window.unitsFor("b", 1_000, 256)).toBe(3);
    now = 60_000;
    expect(window.unitsFor("a", 200, 256)).toBe(0);
  });

  it("holds at most 10,000 keys: past that, a refusal is not remembered and bytes are charged whole units", () => {
    const window = new LimitWindow(60_000, () => 0);
    for (let key = 0; key < 10_000; key += 1) {
      window.refuse(`r${key}`);
      window.unitsFor(`c${key}`, 1, 256);
    }
    window.refuse("one too many");
    expect(window.isRefused("one too many")).toBe(false);
    expect(window.unitsFor("one too many", 1, 256)).toBe(1);
  });
});
