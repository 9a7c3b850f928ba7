import { describe, expect, it } from "vitest";

import { parseDsn } from "./dsn.ts";
import { allowedQueries, checkEnvelopeDsn, compileAllowList } from "./allow-list.ts";
import type { TunnelQuery } from "../request/query.ts";

const KEY = "0123456789abcdef0123456789abcdef";
const US = `https://${KEY}@o11.ingest.us.sentry.io/21`;
const DE = `https://${KEY}@o12.ingest.de.sentry.io/22`;
const NO_REGION = `https://${KEY}@o13.ingest.sentry.io/23`;
const SELF_HOSTED = `https://${KEY}@sentry.example.com/monitoring/24`;

const allowed = compileAllowList([US, DE, NO_REGION, SELF_HOSTED].map((dsn) => parseDsn(dsn)!), undefined);

const query = (org: string | undefined, project: string, region?: string): TunnelQuery => ({ org, project, region });

describe("checkEnvelopeDsn", () => {
  it.each([
    ["us", US, "https://o11.ingest.us.sentry.io/api/21/envelope/?hsts=0"],
    ["de", DE, "https://o12.ingest.de.sentry.io/api/22/envelope/?hsts=0"],
    ["no region", NO_REGION, "https://o13.ingest.sentry.io/api/23/envelope/?hsts=0"],
    ["self-hosted", SELF_HOSTED, "https://sentry.example.com/monitoring/api/24/envelope/"],
    ["us, with the legacy secret an old SDK or a multiplexed route writes", `https://${KEY}:secret@o11.ingest.us.sentry.io/21`, "https://o11.ingest.us.sentry.io/api/21/envelope/?hsts=0"],
  ])("lets an allowed %s DSN through to its own ingest", (_name, dsn, upstream) => {
    const verdict = checkEnvelopeDsn(dsn, allowed);
    expect(verdict.ok && verdict.allowed.upstreamUrl).toBe(upstream);
  });

  it("matches a DSN allow-listed with its secret, sent with it or without", () => {
    const withSecret = compileAllowList([parseDsn(`https://${KEY}:s3cret@sentry.example.com/7`)!], undefined);
    expect(checkEnvelopeDsn(`https://${KEY}:s3cret@sentry.example.com/7`, withSecret).ok).toBe(true);
    expect(checkEnvelopeDsn(`https://${KEY}@sentry.example.com/7`, withSecret).ok).toBe(true);
    expect(checkEnvelopeDsn(`https://${KEY}:s3cret@sentry.example.com:443/7`, withSecret)).toEqual({ ok: false, reason: "dsn_not_allowed" });
  });

  it("compares hosts without regard to case, and forwards to the allowed DSN's own ingest either way", () => {
    const shouted = `https://${KEY}@O11.Ingest.US.Sentry.IO/21`;
    const verdict = checkEnvelopeDsn(shouted, allowed);
    expect(verdict.ok && verdict.allowed).toMatchObject({ dsn: US, upstreamUrl: "https://o11.ingest.us.sentry.io/api/21/envelope/?hsts=0" });
    const configuredShouting = compileAllowList([parseDsn(shouted)!], undefined);
    expect([checkEnvelopeDsn(US, configuredShouting).ok, checkEnvelopeDsn(shouted, configuredShouting).ok]).toEqual([true, true]);
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
    ["the allowed DSN with a secret and a port", `https://${KEY}:secret@o11.ingest.us.sentry.io:443/21`],
  ])("refuses %s", (_name, dsn) => {
    const verdict = checkEnvelopeDsn(dsn, allowed);
    expect(verdict.ok ? "allowed" : verdict.reason).toBe("dsn_not_allowed");
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
    const verdict = checkEnvelopeDsn(dsn, allowed);
    expect(verdict.ok ? "allowed" : verdict.reason).toBe("dsn_invalid");
  });
});

describe("allowedQueries", () => {
  const namesAllowed = allowedQueries(allowed);

  it.each([
    ["us", query("11", "21", "us")],
    ["de", query("12", "22", "de")],
    ["no region", query("13", "23")],
    ["self-hosted", query(undefined, "24")],
  ])("takes a query naming an allowed %s project", (_name, tunnelQuery) => {
    expect(namesAllowed(tunnelQuery)).toBe(true);
  });

  it.each([
    ["a missing org", query(undefined, "21", "us")],
    ["another org", query("12", "21", "us")],
    ["a project of no allowed DSN", query("11", "99", "us")],
    ["a missing region", query("11", "21")],
    ["another region", query("11", "21", "de")],
    ["an org for a self-hosted project", query("11", "24")],
  ])("refuses a query naming %s", (_name, tunnelQuery) => {
    expect(namesAllowed(tunnelQuery)).toBe(false);
  });
});
