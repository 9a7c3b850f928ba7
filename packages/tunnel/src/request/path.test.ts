import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { isTunnelPathSpelling, reportPathOf, tunnelPaths } from "./path.ts";

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

  it("takes every spelling of each route and of its report path, once the routes are given", () => {
    const paths = tunnelPaths(["/k7q2x9", "/a3f8c1/x"]);
    for (const path of ["/k7q2x9", "/K7Q2X9/", "//k7q2x9", "/%6B7q2x9", "/k7q2x9/csp", "/A3F8C1//X", "/a3f8c1/x/csp", "/monitoring", "/monitoring/security-report"]) {
      expect(isTunnelPathSpelling(path, paths), path).toBe(true);
    }
    for (const path of ["/k7q2x", "/k7q2x9/x", "/a3f8c1", "/k7q2x9/security-report", "/monitoring/csp"]) {
      expect(isTunnelPathSpelling(path, paths), path).toBe(false);
    }
  });

  it("takes Sentry's own paths for envelopes, without a report path", () => {
    const paths = tunnelPaths(["/k7q2x9", "/monitoring"], ["/2icqaq"]);
    for (const path of ["/K7Q2X9", "/k7q2x9/csp", "/2icqaq/", "/%32icqaq"]) expect(isTunnelPathSpelling(path, paths), path).toBe(true);
    expect(isTunnelPathSpelling("/2icqaq/csp", paths)).toBe(false);
  });

  it("puts a route's CSP reports beside it, and the original route's where they always were", () => {
    expect(reportPathOf("/k7q2x9")).toBe("/k7q2x9/csp");
    expect(reportPathOf("/monitoring")).toBe("/monitoring/security-report");
  });

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
