import { describe, expect, it } from "vitest";

import { siteRuleTest } from "./site-rules.ts";

const keptFor = (host: string, lines: string[]) => lines.filter(siteRuleTest(host));

describe("siteRuleTest: what of a list can decide a request from the site to itself", () => {
  it("keeps generic rules, rules for the host and its parents, and their exceptions", () => {
    const lines = [
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
    expect(keptFor("app.example.com", lines)).toEqual(lines);
  });

  it("drops comments, cosmetic filters, other hosts' rules, third-party rules, rules whose domains leave the host out, rules for types the pages never send it, and rules that rewrite rather than block", () => {
    const lines = [
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
    expect(keptFor("app.example.com", lines)).toEqual([]);
  });

  it("keeps the lists' preprocessor sections, so that the engine skips what a browser skips", () => {
    const lines = ["!#if env_firefox", "/ff-only$xhr", "!#else", "/others$xhr", "!#endif"];
    expect(keptFor("example.com", lines)).toEqual(lines);
  });
});
