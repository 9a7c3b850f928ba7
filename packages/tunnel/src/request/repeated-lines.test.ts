import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { RepeatedLines } from "./repeated-lines.ts";

interface Said {
  client: string;
  kind: string;
  at: number;
}

/** Lines written, each with the window it was written in, and what it says. */
function lineLog(periodSeconds: number) {
  let now = 0;
  const written: { window: number; client: string; kind: string; repeats: number }[] = [];
  const lines = new RepeatedLines<{ client: string; kind: string }>(periodSeconds, (line) => written.push({ window: Math.floor(now / (periodSeconds * 1000)), ...line }), () => now);
  return {
    written,
    say({ client, kind, at }: Said) {
      now = at;
      lines.say(client, kind, { client, kind });
    },
    flush(at: number) {
      now = at;
      lines.flush();
    },
  };
}

describe("RepeatedLines", () => {
  it("writes at most one line per client, kind and window, and every line said is counted once it is written", () => {
    const said = fc.record({ client: fc.constantFrom("192.0.2.1", "192.0.2.2", "2001:db8::1"), kind: fc.constantFrom("a", "b"), step: fc.nat(4_000) });
    fc.assert(
      fc.property(fc.array(said, { maxLength: 300 }), (steps) => {
        const log = lineLog(10);
        let at = 1_000_000;
        for (const { client, kind, step } of steps) log.say({ client, kind, at: (at += step) });
        // Anything the isolate records two windows on brings out what is still held.
        log.flush(at + 20_000);
        const perWindow = new Map<string, number>();
        for (const line of log.written) {
          const key = `${line.client} ${line.kind} ${line.window}`;
          perWindow.set(key, (perWindow.get(key) ?? 0) + 1);
        }
        expect(Math.max(0, ...perWindow.values())).toBeLessThanOrEqual(1);
        for (const client of ["192.0.2.1", "192.0.2.2", "2001:db8::1"]) {
          for (const kind of ["a", "b"]) {
            const stands = log.written.filter((line) => line.client === client && line.kind === kind).reduce((sum, line) => sum + 1 + line.repeats, 0);
            expect(stands).toBe(steps.filter((step) => step.client === client && step.kind === kind).length);
          }
        }
      }),
    );
  });

  it("counts an IPv6 client by its /64, and clients past the 10,000 it remembers under one count", () => {
    const log = lineLog(10);
    log.say({ client: "2001:db8:1:2::1", kind: "a", at: 0 });
    log.say({ client: "2001:db8:1:2::ffff", kind: "a", at: 1 });
    expect(log.written).toHaveLength(1);
    for (let client = 0; client < 12_000; client += 1) log.say({ client: `10.0.${client >> 8}.${client & 255}`, kind: "a", at: 2 });
    // 9,999 more clients fit; every one after them shares one line.
    expect(log.written).toHaveLength(1 + 9_999 + 1);
  });
});
