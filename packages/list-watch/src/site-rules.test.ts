import { createHash } from "node:crypto";

import { describe, expect, it } from "vitest";

import { SITE_RULES_VERSION, siteRuleTest } from "./site-rules.ts";

const keptFor = (host: string, lines: string[]) => lines.filter(siteRuleTest(host));

const KEPT = [
  "/monitoring?o=$xmlhttprequest",
  "/^https:\\/\\/[a-z]+\\.[a-z]+\\/[a-z0-9]{10}$/$xhr",
  "||app.example.com/6b1xzn8op8$xhr",
  "||example.com/_private/browser/errors",
  "|https://app.example.com/monitoring",
  "@@||app.example.com/6b1xzn8op8$xhr",
  "/sentry.$script,domain=example.com|other.org",
  "/telemetry/$xhr,domain=~other.org",
  "/beacon$xhr,domain=example.*",
  "/ping$xhr,from=/exam/",
  "/track$xhr,~third-party",
  "||exam*.com/errors",
  "/monitoring$xhr,image",
  "/monitoring$~image",
  "/x$xhr,header=server:/^nginx$/",
  "$all,domain=example.com",
  "/^https:\\/\\/[a-z.]+\\/[a-z0-9]{10}$/",
];
const DROPPED = [
  "! Title: EasyPrivacy",
  "[Adblock Plus 2.0]",
  "!#include other.txt",
  "example.com##.banner",
  "example.com#@#.banner",
  "##+js(set, x, 1)",
  "example.com#$#body { color: red }",
  "example.com$$script[src]",
  "||tracker.net^",
  "||app.example.com.evil.net/6b1xzn8op8",
  "||notexample.com/errors",
  "/monitoring$xhr,third-party",
  "/monitoring$3p",
  "/sentry.$script,domain=other.org",
  "/telemetry/$xhr,domain=~example.com",
  "/telemetry/$xhr,to=other.org",
  "/monitoring$popup",
  "/monitoring$image,doc",
  "$popup,domain=app.example.com",
  "/monitoring$xhr,removeparam=o",
  "/monitoring$xhr,urlskip=?url",
  "/^https:\\/\\/[a-z.]+\\/[a-z0-9]{10}$/$xhr,3p",
  "/^https:\\/\\/app\\.example\\.com\\/$/$script,strict3p",
  "",
];
const PREPROCESSED = ["!#if env_firefox", "/ff-only$xhr", "!#else", "/others$xhr", "!#endif"];

describe("siteRuleTest: what of a list can decide a request from the site to itself", () => {
  it("keeps generic rules, rules for the host and its parents, and their exceptions", () => {
    expect(keptFor("app.example.com", KEPT)).toEqual(KEPT);
  });

  it("drops comments, cosmetic filters, other hosts' rules, third-party rules, rules whose domains leave the host out, rules for types the pages never send it, and rules that rewrite rather than block", () => {
    expect(keptFor("app.example.com", DROPPED)).toEqual([]);
  });

  it("keeps the lists' preprocessor sections, so that the engine skips what a browser skips", () => {
    expect(keptFor("example.com", PREPROCESSED)).toEqual(PREPROCESSED);
  });

  it("is pinned to its version: the cases above change only with SITE_RULES_VERSION, so that stored lists are read again", () => {
    // What it keeps changes only with these cases. When this fails, raise SITE_RULES_VERSION and
    // write the new digest with it: stored lists are then read again in full, once.
    const cases = createHash("sha256").update(JSON.stringify([KEPT, DROPPED, PREPROCESSED])).digest("hex").slice(0, 16);
    expect({ version: SITE_RULES_VERSION, cases }).toEqual({ version: 2, cases: "83b79d41637988ff" });
  });
});
