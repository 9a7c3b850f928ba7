import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { isTunnelPathSpelling } from "./path";

describe("isTunnelPathSpelling", () => {
  it.each(["/monitoring", "/monitoring/", "/Monitoring", "/MONITORING//", "//monitoring", "/%6Donitoring", "/%6donitoring%2F", "/%256Donitoring"])(
    "takes %s for the tunnel's path",
    (path) => {
      expect(isTunnelPathSpelling(path)).toBe(true);
    },
  );

  it.each(["/", "/monitoring-guide", "/monitoring/x", "/build/monitoring", "/monitorin", "/monitoring%", "/%E0%A4%A"])(
    "does not take %s for it",
    (path) => {
      expect(isTunnelPathSpelling(path)).toBe(false);
    },
  );

  it("takes any mix of case, escapes and extra slashes for it", () => {
    const spelling = fc
      .tuple(
        fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
        fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 3 }),
      )
      .map(([upper, escaped, leading, trailing]) => {
        const letters = [..."monitoring"].map((letter, index) => {
          const cased = upper[index] ? letter.toUpperCase() : letter;
          return escaped[index] ? `%${cased.charCodeAt(0).toString(16)}` : cased;
        });
        return `${"/".repeat(leading)}${letters.join("")}${"/".repeat(trailing)}`;
      });
    fc.assert(fc.property(spelling, (path) => isTunnelPathSpelling(path)));
  });
});
