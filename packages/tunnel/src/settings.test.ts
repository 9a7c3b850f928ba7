import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { readTunnelSettings, type TunnelVariables } from "./settings.ts";
import { ConfigError } from "./shared/variables.ts";

const DSN = "https://0123456789abcdef0123456789abcdef@o1.ingest.us.sentry.io/2";

/** The variable a refusal names, and what it says. */
function refusal(read: () => unknown): { variable: string; message: string } | undefined {
  try {
    read();
  } catch (error) {
    if (error instanceof ConfigError) return { variable: error.variable, message: error.message };
    throw error;
  }
  return undefined;
}

describe("readTunnelSettings: every form wrangler gives a variable", () => {
  it("reads an unquoted TOML number as the number it is, and true or false as on or off", () => {
    // `TUNNEL_TIMEOUT_MS = 30000` and `TUNNEL_LOG_FORWARDED = true` in [vars] reach the Worker as JSON.
    const settings = readTunnelSettings({ SENTRY_DSN: DSN, TUNNEL_TIMEOUT_MS: 5_000, TUNNEL_MAX_ENVELOPE_BYTES: 1_048_576, TUNNEL_LOG_FORWARDED: true, TUNNEL_SENTRY_PATHS: false });
    expect(settings).toMatchObject({ timeoutMs: 5_000, maxEnvelopeBytes: 1_048_576, logForwarded: true, sentryPaths: [] });
    expect(readTunnelSettings({ TUNNEL_LOG_FORWARDED: "true" }).logForwarded).toBe(true);
  });

  it.each([
    ["a fraction where a whole number is meant", { TUNNEL_TIMEOUT_MS: 2.5 }, "TUNNEL_TIMEOUT_MS", 'TUNNEL_TIMEOUT_MS must be a whole number above 0, got "2.5"'],
    ["a boolean where a whole number is meant", { TUNNEL_TIMEOUT_MS: true }, "TUNNEL_TIMEOUT_MS", 'TUNNEL_TIMEOUT_MS must be a whole number above 0, got "true"'],
    ["a number where a DSN is meant", { SENTRY_DSN: 5 }, "SENTRY_DSN", 'SENTRY_DSN is not a valid Sentry DSN (https://<key>@<host>/<project id>): "5"'],
    ["a TOML table", { TUNNEL_ROUTE: { path: "/x" } }, "TUNNEL_ROUTE", 'TUNNEL_ROUTE must be text, a number, or true or false, got {"path":"/x"}'],
    ["a TOML array", { TUNNEL_ALLOWED_ORIGINS: ["https://a.example"] }, "TUNNEL_ALLOWED_ORIGINS", 'TUNNEL_ALLOWED_ORIGINS must be text, a number, or true or false, got ["https://a.example"]'],
  ])("refuses %s in one line that names the variable", (_, variables, variable, message) => {
    expect(refusal(() => readTunnelSettings(variables as unknown as TunnelVariables))).toEqual({ variable, message });
  });
});

describe("readTunnelSettings: the spool's queues", () => {
  it("names the spool's queues by default as the README's wrangler.toml does, and takes others", () => {
    expect(readTunnelSettings({})).toMatchObject({ spoolQueue: "tunnel-spool", deadLetterQueue: "tunnel-spool-dead" });
    expect(readTunnelSettings({ TUNNEL_SPOOL_QUEUE_NAME: "staging-spool", TUNNEL_DEAD_LETTER_QUEUE_NAME: "staging-spool-dead" })).toMatchObject({
      spoolQueue: "staging-spool",
      deadLetterQueue: "staging-spool-dead",
    });
  });

  it.each([
    [{ TUNNEL_SPOOL_QUEUE_NAME: "Spool Queue" }, "TUNNEL_SPOOL_QUEUE_NAME"],
    [{ TUNNEL_DEAD_LETTER_QUEUE_NAME: "tunnel-spool" }, "TUNNEL_DEAD_LETTER_QUEUE_NAME"],
    [{ TUNNEL_SPOOL_QUEUE_NAME: "one", TUNNEL_DEAD_LETTER_QUEUE_NAME: "one" }, "TUNNEL_DEAD_LETTER_QUEUE_NAME"],
  ])("refuses %j, naming %s", (variables, variable) => {
    expect(refusal(() => readTunnelSettings(variables))?.variable).toBe(variable);
  });
});

describe("readTunnelSettings: the host's paths", () => {
  it.each(["/monitoring", "/Monitoring", "/monitoring/security-report", "/monitoring/*", "/monitoring/:report"])(
    "refuses a host that declares %s, where the original route is always served",
    (path) => {
      expect(refusal(() => readTunnelSettings({ SENTRY_DSN: DSN }, { hostPaths: [path] }))).toEqual({
        variable: "hostPaths",
        message: expect.stringContaining(`names "${path}", which takes /monitoring or /monitoring/security-report`) as unknown as string,
      });
    },
  );

  it("takes a root catch-all, pages beside the original route, and a pattern whose one value the tunnel takes", () => {
    const hostPaths = ["/*", "/monitor", "/monitoring-help", "/build/*", "/:section/:page"];
    expect(readTunnelSettings({ SENTRY_DSN: DSN, TUNNEL_ROUTE: "/k7q2x9/a/b", TUNNEL_SENTRY_PATHS: "off" }, { hostPaths }).hostPaths).toEqual(hostPaths);
  });
});

describe("readTunnelSettings: the defaults, written once in the README", () => {
  /** Where the settings keep each variable that has a number for its default. */
  const READ_AS: Record<string, (settings: ReturnType<typeof readTunnelSettings>) => number> = {
    TUNNEL_MAX_ENVELOPE_BYTES: (settings) => settings.maxEnvelopeBytes,
    TUNNEL_TIMEOUT_MS: (settings) => settings.timeoutMs,
    TUNNEL_RATE_LIMIT_PERIOD_SECONDS: (settings) => settings.rateLimitPeriodSeconds,
    TUNNEL_SPOOL_RETRY_SECONDS: (settings) => settings.spoolRetrySeconds,
    TUNNEL_SPOOL_MAX_AGE_SECONDS: (settings) => settings.spoolMaxAgeSeconds,
    TUNNEL_SPOOL_MAX_RETRIES: (settings) => settings.spoolMaxRetries,
  };

  it("reads an empty environment as the README's table of variables says", () => {
    const readme = readFileSync(`${import.meta.dirname}/../README.md`, "utf8");
    const documented = Object.fromEntries([...readme.matchAll(/^\| `(TUNNEL_[A-Z_]+)` \| `(\d+)`/gm)].map(([, name, value]) => [name, Number(value)]));
    const read = readTunnelSettings({});
    expect(Object.keys(documented).sort()).toEqual(Object.keys(READ_AS).sort());
    for (const [name, readAs] of Object.entries(READ_AS)) expect(readAs(read), name).toBe(documented[name]);
    // The spool's queues, named in one row.
    expect(readme).toContain(`| \`TUNNEL_SPOOL_QUEUE_NAME\`, \`TUNNEL_DEAD_LETTER_QUEUE_NAME\` | \`${read.spoolQueue}\`, \`${read.deadLetterQueue}\` |`);
  });
});
