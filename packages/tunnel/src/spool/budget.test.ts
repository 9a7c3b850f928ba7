import { describe, expect, it } from "vitest";

import { BindingFailed } from "./binding-call.ts";
import { createSpoolBudget, SPOOL_BUDGET_UNIT_BYTES } from "./budget.ts";

const UNIT = SPOOL_BUDGET_UNIT_BYTES;

/** A budget binding that allows `limit` calls per key, and records them. */
function limiter(limit: number, name = "TUNNEL_SPOOL_CLIENT_BUDGET") {
  const calls = new Map<string, number>();
  return {
    calls,
    name,
    limiter: {
      async limit({ key }: { key: string }) {
        calls.set(key, (calls.get(key) ?? 0) + 1);
        return { success: (calls.get(key) ?? 0) <= limit };
      },
    },
  };
}

/** No bound on a call: the request's deadline is the tunnel's tests' business. */
const unbounded = <T>(call: Promise<T>) => call;

describe("createSpoolBudget", () => {
  it("charges a client a unit per 256 KiB stored, and refuses it past its budget while others still store", async () => {
    const perClient = limiter(80);
    const budget = createSpoolBudget(perClient, undefined, () => 0);
    expect(await budget("203.0.113.1", 20 * 1024 * 1024, unbounded)).toBe(true);
    expect(perClient.calls.get("203.0.113.1")).toBe(80);
    expect(await budget("203.0.113.1", UNIT, unbounded)).toBe(false);
    expect(await budget("203.0.113.2", 2 * UNIT, unbounded)).toBe(true);
    expect(perClient.calls.get("203.0.113.2")).toBe(2);
  });

  it("carries small envelopes' bytes until they make a unit, so most cost no call", async () => {
    const perClient = limiter(1_000);
    const budget = createSpoolBudget(perClient, undefined, () => 0);
    for (let sent = 0; sent < 100; sent += 1) expect(await budget("203.0.113.1", 10_000, unbounded)).toBe(true);
    // 1,000,000 bytes: three whole units charged, the rest carried.
    expect(perClient.calls.get("203.0.113.1")).toBe(3);
  });

  it("starts each window afresh", async () => {
    let clock = 0;
    const perClient = limiter(1_000);
    const budget = createSpoolBudget(perClient, undefined, () => clock);
    await budget("203.0.113.1", UNIT - 1, unbounded);
    clock = 60_000;
    await budget("203.0.113.1", UNIT - 1, unbounded);
    expect(perClient.calls.get("203.0.113.1")).toBeUndefined();
  });

  it("keeps a total for everyone, which a client over its own budget does not spend", async () => {
    const perClient = limiter(4);
    const total = limiter(6, "TUNNEL_SPOOL_TOTAL_BUDGET");
    const budget = createSpoolBudget(perClient, total, () => 0);
    expect(await budget("203.0.113.1", 4 * UNIT, unbounded)).toBe(true);
    expect(await budget("203.0.113.1", UNIT, unbounded)).toBe(false);
    expect(total.calls.get("all")).toBe(4);
    expect(await budget("203.0.113.2", 2 * UNIT, unbounded)).toBe(true);
    expect(await budget("203.0.113.3", UNIT, unbounded)).toBe(false);
  });

  it("names the binding that fails, rather than storing past it, and never says no without bindings", async () => {
    const failing = { name: "TUNNEL_SPOOL_TOTAL_BUDGET", limiter: { limit: async () => Promise.reject(new Error("down")) } };
    const refusal = await createSpoolBudget(limiter(10), failing)("203.0.113.1", UNIT, unbounded).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(BindingFailed);
    expect((refusal as BindingFailed).binding).toBe("TUNNEL_SPOOL_TOTAL_BUDGET");
    expect(await createSpoolBudget(undefined, undefined)("203.0.113.1", 1_000 * UNIT, unbounded)).toBe(true);
  });
});

describe("a spent budget", () => {
  it("stays spent for the window, even for envelopes too small to make a unit", async () => {
    const perClient = limiter(1);
    const budget = createSpoolBudget(perClient, undefined, () => 0);
    expect(await budget("203.0.113.1", UNIT, unbounded)).toBe(true);
    expect(await budget("203.0.113.1", UNIT, unbounded)).toBe(false);
    expect(await budget("203.0.113.1", 10, unbounded)).toBe(false);
    expect(perClient.calls.get("203.0.113.1")).toBe(2);
  });
});
