import { describe, expect, it } from "vitest";

import { createClientLimiter, type LimiterLine } from "./client-limiter.ts";

/** A binding that allows `limit` calls per key and counts every call it gets. */
function countingBinding(limit: number) {
  const counts = new Map<string, number>();
  const binding = {
    calls: 0,
    async limit({ key }: { key: string }) {
      binding.calls += 1;
      const count = (counts.get(key) ?? 0) + 1;
      counts.set(key, count);
      return { success: count <= limit };
    },
    reset: () => counts.clear(),
  };
  return binding;
}

describe("createClientLimiter", () => {
  it("asks the binding about every request until it refuses a client, then refuses that client itself until the window ends", async () => {
    let clock = 20_000;
    const binding = countingBinding(3);
    const allows = createClientLimiter(binding, 10, () => clock);
    const answers = [];
    for (let sent = 0; sent < 10; sent += 1) answers.push(await allows("203.0.113.9"));
    expect(answers).toEqual([true, true, true, false, false, false, false, false, false, false]);
    expect(binding.calls).toBe(4);

    // Another client is still asked about, and allowed.
    expect(await allows("198.51.100.1")).toBe(true);
    expect(binding.calls).toBe(5);

    // The next window: asked again, and the binding decides.
    clock = 30_000;
    binding.reset();
    expect(await allows("203.0.113.9")).toBe(true);
    expect(binding.calls).toBe(6);
  });

  it("remembers an IPv6 client by its /64", async () => {
    const binding = countingBinding(0);
    const allows = createClientLimiter(binding, 10, () => 0);
    expect(await allows("2001:db8:1:2::1")).toBe(false);
    expect(await allows("2001:db8:1:2::ffff")).toBe(false);
    expect(binding.calls).toBe(1);
  });

  it("refuses the request when the binding fails, asks again next time, and says so once a period with the count of failures", async () => {
    let calls = 0;
    let clock = 0;
    const said: LimiterLine[] = [];
    const allows = createClientLimiter(
      {
        limit: async () => {
          calls += 1;
          throw new Error("limiter unavailable");
        },
      },
      10,
      () => clock,
      (line) => void said.push(line),
    );
    expect([await allows("203.0.113.9"), await allows("203.0.113.9"), await allows("198.51.100.1")]).toEqual([false, false, false]);
    expect(calls).toBe(3);
    clock = 10_000;
    await allows("203.0.113.9");
    expect(said).toEqual([
      { event: "tunnel_limiter", status: "failed", error: "limiter unavailable", failures: 1 },
      { event: "tunnel_limiter", status: "failed", error: "limiter unavailable", failures: 3 },
    ]);
  });

  it("remembers a bounded number of refused clients: past that, the binding is asked as before", async () => {
    const binding = countingBinding(0);
    const allows = createClientLimiter(binding, 10, () => 0);
    for (let client = 0; client < 10_001; client += 1) await allows(`10.${client >> 16}.${(client >> 8) & 255}.${client & 255}`);
    expect(binding.calls).toBe(10_001);
    await allows("10.0.0.0");
    await allows("10.0.39.16");
    // The first is remembered; the 10,001st did not fit.
    expect(binding.calls).toBe(10_002);
  });
});
