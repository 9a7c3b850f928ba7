import { readdirSync, readFileSync } from "node:fs";
import { createServer, type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";

import { describe, expect, it } from "vitest";

import { runProjectScript } from "../test/support/npm-script.ts";

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

  it("prints a broken API's answer without the token it echoes or the escape sequences it holds", { timeout: 60_000 }, async () => {
    const token = "cf-token-5e1c2d";
    const echo: RequestListener = (request, response) =>
      // Raw, as a broken server sends it: JSON would have escaped the control characters.
      void response.writeHead(403, { "content-type": "application/json" }).end(`{"error":"denied ${request.headers.authorization}\u001b]52;c;cm0gLXJm\u0007\u001b[2J"}`);
    const api = createServer(echo);
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    try {
      const run = await runProjectScript("health", [], { CLOUDFLARE_ACCOUNT_ID: "abc", CLOUDFLARE_API_TOKEN: token, CLOUDFLARE_API_BASE_URL: `http://127.0.0.1:${(api.address() as AddressInfo).port}` });
      expect(run.code).toBe(1);
      expect(run.stderr.trim()).toBe('Cloudflare\'s SQL API answered 403: {"error":"denied Bearer [redacted]]52;c;cm0gLXJm[2J"}');
    } finally {
      api.closeAllConnections();
      await new Promise<void>((resolve) => api.close(() => resolve()));
    }
  });
});
