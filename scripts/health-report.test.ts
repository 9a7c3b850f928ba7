import { readdirSync, readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { credentialsFrom, queryText } from "./health-report.ts";

const QUERIES = readdirSync("docs/queries").map((file) => file.replace(/\.sql$/, ""));

describe("npm run health's queries and settings", () => {
  it("reads the day by quarter hours from the same files, and weighs every sum by _sample_interval", () => {
    for (const name of QUERIES) {
      const hour = queryText(name, "hour");
      const day = queryText(name, "day");
      expect(hour, name).toContain("INTERVAL '1' HOUR");
      expect(day, name).not.toContain("INTERVAL '1' HOUR");
      expect(day, name).toContain("INTERVAL '1' DAY");
      if (hour.includes("toStartOfInterval")) expect(day, name).toContain("INTERVAL '15' MINUTE");
      // A sampled row stands for _sample_interval rows: a count or a plain sum would under-count.
      expect(hour, name).not.toMatch(/count\(/i);
      for (const aggregate of hour.match(/(SUM|quantileExactWeighted)\([^)]*\)/g) ?? []) expect(aggregate, name).toContain("_sample_interval");
    }
  });

  it("is the query the package's README shows, as it is in the file", () => {
    expect(readFileSync("packages/tunnel/README.md", "utf8")).toContain(`\`\`\`sql\n${queryText("refusals", "hour")}\`\`\``);
  });

  it("needs the account and a token, says where to get them, and takes the API's base URL as wrangler does", () => {
    expect(credentialsFrom({})).toMatch(/^npm run health needs CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN: .*Account Analytics > Read/);
    expect(credentialsFrom({ CLOUDFLARE_ACCOUNT_ID: "abc" })).toMatch(/^npm run health needs CLOUDFLARE_API_TOKEN:/);
    expect(credentialsFrom({ CLOUDFLARE_ACCOUNT_ID: "abc", CLOUDFLARE_API_TOKEN: "t" })).toEqual({ accountId: "abc", token: "t", baseUrl: "https://api.cloudflare.com/client/v4" });
    expect(credentialsFrom({ CLOUDFLARE_ACCOUNT_ID: "abc", CLOUDFLARE_API_TOKEN: "t", CLOUDFLARE_API_BASE_URL: "http://127.0.0.1:9/client/v4/" })).toMatchObject({ baseUrl: "http://127.0.0.1:9/client/v4" });
  });
});
