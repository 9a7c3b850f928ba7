import { describe, expect, it } from "vitest";

import { parseDsn } from "./dsn.server";
import { checkEnvelopeDsn, compileAllowList } from "./dsn-policy.server";
import type { TunnelQuery } from "./tunnel-query.server";

const KEY = "0123456789abcdef0123456789abcdef";
const US = `https://${KEY}@o11.ingest.us.sentry.io/21`;
const DE = `https://${KEY}@o12.ingest.de.sentry.io/22`;
const NO_REGION = `https://${KEY}@o13.ingest.sentry.io/23`;
const SELF_HOSTED = `https://${KEY}@sentry.example.com/monitoring/24`;

const allowed = compileAllowList([US, DE, NO_REGION, SELF_HOSTED].map((dsn) => parseDsn(dsn)!), undefined);

const query = (org: string | undefined, project: string, region?: string): TunnelQuery => ({ org, project, region });

describe("checkEnvelopeDsn", () => {
  it.each([
    ["us", US, query("11", "21", "us"), "https://o11.ingest.us.sentry.io/api/21/envelope/?hsts=0"],
    ["de", DE, query("12", "22", "de"), "https://o12.ingest.de.sentry.io/api/22/envelope/?hsts=0"],
    ["no region", NO_REGION, query("13", "23"), "https://o13.ingest.sentry.io/api/23/envelope/?hsts=0"],
    ["self-hosted", SELF_HOSTED, query(undefined, "24"), "https://sentry.example.com/monitoring/api/24/envelope/"],
  ])("lets an allowed %s DSN through to its own ingest", (_name, dsn, tunnelQuery, upstream) => {
    const verdict = checkEnvelopeDsn(dsn, tunnelQuery, allowed);
    expect(verdict.ok && verdict.allowed.upstreamUrl).toBe(upstream);
  });

  it.each([
    ["another public key", `https://ffffffffffffffffffffffffffffffff@o11.ingest.us.sentry.io/21`],
    ["another project", `https://${KEY}@o11.ingest.us.sentry.io/99`],
    ["another org", `https://${KEY}@o99.ingest.us.sentry.io/21`],
    ["another region", `https://${KEY}@o11.ingest.de.sentry.io/21`],
    ["another host", `https://${KEY}@o11.ingest.us.sentry.io.evil.example/21`],
    ["a port", `https://${KEY}@o11.ingest.us.sentry.io:8443/21`],
    ["plain http", `http://${KEY}@o11.ingest.us.sentry.io/21`],
    ["a path prefix", `https://${KEY}@o11.ingest.us.sentry.io/evil/21`],
    ["a self-hosted DSN under another prefix", `https://${KEY}@sentry.example.com/24`],
    ["an internal address", `http://${KEY}@169.254.169.254/21`],
    ["the allowed DSN in capitals", US.toUpperCase().replace("HTTPS", "https")],
    ["a secret the SDK never sends", `https://${KEY}:secret@o11.ingest.us.sentry.io/21`],
  ])("refuses %s", (_name, dsn) => {
    const verdict = checkEnvelopeDsn(dsn, query("11", "21", "us"), allowed);
    expect(verdict.ok ? "allowed" : verdict.reason).toBe("dsn_not_allowed");
  });

  it.each([
    ["a missing org", query(undefined, "21", "us")],
    ["another org", query("12", "21", "us")],
    ["another project", query("11", "22", "us")],
    ["a missing region", query("11", "21")],
    ["another region", query("11", "21", "de")],
  ])("refuses a SaaS envelope whose query names %s", (_name, tunnelQuery) => {
    const verdict = checkEnvelopeDsn(US, tunnelQuery, allowed);
    expect(verdict.ok ? "allowed" : verdict.reason).toBe("query_mismatch");
  });

  it("refuses an org in the query of a self-hosted envelope", () => {
    const verdict = checkEnvelopeDsn(SELF_HOSTED, query("11", "24"), allowed);
    expect(verdict.ok ? "allowed" : verdict.reason).toBe("query_mismatch");
  });

  it.each([
    ["an empty string", ""],
    ["no scheme", `${KEY}@o11.ingest.us.sentry.io/21`],
    ["another scheme", `ftp://${KEY}@o11.ingest.us.sentry.io/21`],
    ["no key", "https://o11.ingest.us.sentry.io/21"],
    ["no project", `https://${KEY}@o11.ingest.us.sentry.io/`],
    ["a very long string", `https://${KEY}@o11.ingest.us.sentry.io/${"1".repeat(5000)}`],
    ["a javascript: URL", "javascript:alert(1)//@x/1"],
    ["text after the project id", `${US}abc`],
    ["a query after the project id", `${US}?x=1`],
    ["a fragment after the project id", `${US}#x`],
  ])("calls %s an invalid DSN", (_name, dsn) => {
    const verdict = checkEnvelopeDsn(dsn, query("11", "21", "us"), allowed);
    expect(verdict.ok ? "allowed" : verdict.reason).toBe("dsn_invalid");
  });
});
