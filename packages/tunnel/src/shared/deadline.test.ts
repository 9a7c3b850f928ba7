import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { Deadline, earlyEnd, type Phase } from "./deadline.ts";

/** A deadline in one of its three states: running, passed, or cut short by the body. */
function deadlineThat(state: "running" | "passed" | "cut"): Deadline {
  vi.useFakeTimers();
  try {
    const deadline = new Deadline(60_000);
    if (state === "passed") vi.advanceTimersByTime(60_000);
    else if (state === "cut") deadline.cut(new Error("the body failed"));
    deadline.end();
    return deadline;
  } finally {
    vi.useRealTimers();
  }
}

describe("earlyEnd", () => {
  it.each([
    ["receiving", "passed", {}, "body_timeout"],
    ["receiving", "running", {}, "body_incomplete"],
    ["forwarding", "passed", { complete: true }, "upstream_timeout"],
    ["forwarding", "passed", { complete: false }, "body_timeout"],
    ["forwarding", "cut", { tooLarge: true }, "envelope_too_large"],
    ["forwarding", "cut", { tooLarge: false }, "body_incomplete"],
    ["forwarding", "running", {}, "upstream_unreachable"],
  ] as const)("while %s, with the deadline %s and the body %j, is %s", (phase, state, body, reason) => {
    expect(earlyEnd(phase as Phase, deadlineThat(state), { complete: false, tooLarge: false, ...body })).toBe(reason);
  });

  it("races work against the deadline, and stops racing once it is cut", async () => {
    const deadline = new Deadline(60_000);
    await expect(deadline.race(Promise.resolve("done"))).resolves.toBe("done");
    const pending = deadline.race(new Promise(() => {}));
    deadline.cut(new Error("the body failed"));
    await expect(pending).rejects.toThrow("the body failed");
    deadline.end();
  });

  it("aborts its signal when cut, whether the signal was taken before or after", () => {
    const early = new Deadline(60_000);
    const taken = early.signal;
    early.cut(new Error("the body failed"));
    expect(taken.aborted).toBe(true);

    const late = new Deadline(60_000);
    late.cut(new Error("the body failed"));
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toEqual(new Error("the body failed"));
    early.end();
    late.end();
  });

  it("passes: races reject, the signal aborts, and the early end is the deadline's", async () => {
    const deadline = new Deadline(5);
    const taken = deadline.signal;
    await expect(deadline.race(new Promise(() => {}))).rejects.toMatchObject({ name: "TimeoutError" });
    expect(taken.aborted).toBe(true);
    expect(earlyEnd("forwarding", deadline, { complete: true, tooLarge: false })).toBe("upstream_timeout");
  });
});

describe("Deadline.giveUpstreamItsShare", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("gives Sentry half the deadline after a body that came whole at its last moment", () => {
    const deadline = new Deadline(400);
    vi.advanceTimersByTime(350);
    deadline.giveUpstreamItsShare();
    vi.advanceTimersByTime(199);
    expect(deadline.state).toBe("running");
    vi.advanceTimersByTime(1);
    expect(deadline.state).toBe("passed");
  });

  it("changes nothing while the deadline still holds the share", () => {
    const deadline = new Deadline(400);
    vi.advanceTimersByTime(100);
    deadline.giveUpstreamItsShare();
    vi.advanceTimersByTime(299);
    expect(deadline.state).toBe("running");
    vi.advanceTimersByTime(1);
    expect(deadline.state).toBe("passed");
  });
});
