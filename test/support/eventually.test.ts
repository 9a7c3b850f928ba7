import { describe, expect, it } from "vitest";

import { eventually } from "./eventually";

describe("eventually", () => {
  it("says, when it gives up, what it waited for and what it last saw", async () => {
    let deliveries = 0;
    const waiting = eventually(() => deliveries === 2, 60, { saw: () => ({ deliveries }) });
    deliveries = 1;
    await expect(waiting).rejects.toThrow(/^condition not met within 60 ms: \(\) => deliveries === 2\nlast seen: \{ deliveries: 1 \}$/);
  });

  it("returns as soon as the condition holds", async () => {
    let polls = 0;
    await eventually(() => (polls += 1) === 3, 1_000, { pollMs: 1 });
    expect(polls).toBe(3);
  });
});
