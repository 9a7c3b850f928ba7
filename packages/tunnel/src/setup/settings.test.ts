import { readFileSync } from "node:fs";

import { getTunnelPath } from "sentry-core-11";
import { describe, expect, it } from "vitest";

import type { TunnelEnv } from "./from-env.ts";
import { ConfigError } from "../shared/variables.ts";
import { readTunnelSettings, tunnelFromEnv } from "../../test/support/test-settings.ts";
import { configRefusal, EVERY_CLIENT, TEST_DSN } from "../testing/harness.ts";

type TunnelVariables = TunnelEnv;
const SPOOL = { TUNNEL_SPOOL: { send: async () => {} }, TUNNEL_SPOOL_CLIENT_BUDGET: EVERY_CLIENT, TUNNEL_SPOOL_TOTAL_BUDGET: EVERY_CLIENT, TUNNEL_RATE_LIMITER: EVERY_CLIENT };


describe("readTunnelSettings: every form wrangler gives a variable", () => {
  it("reads an unquoted TOML number as the number it is, and true or false as on or off", () => {
    // `TUNNEL_TIMEOUT_MS = 30000` and `TUNNEL_LOG_FORWARDED = true` in [vars] reach the Worker as JSON.
    const settings = readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_TIMEOUT_MS: 5_000, TUNNEL_MAX_ENVELOPE_BYTES: 1_048_576, TUNNEL_LOG_FORWARDED: true, TUNNEL_SENTRY_PATHS: false });
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
    expect(configRefusal(() => readTunnelSettings(variables as unknown as TunnelVariables))).toEqual({ variable, message });
  });
});

describe("readTunnelSettings: the spool's queues", () => {
  it("names the spool's queues by default as the README's wrangler.toml does, and takes others", () => {
    const names = ["tunnel-spool", "tunnel-spool-dead", "staging-spool", "staging-spool-dead"];
    expect(names.map((name) => tunnelFromEnv(SPOOL).handlesQueue(name))).toEqual([true, true, false, false]);
    const staging = tunnelFromEnv({ ...SPOOL, TUNNEL_ROUTE: "/s7g2x9", TUNNEL_SPOOL_QUEUE_NAME: "staging-spool", TUNNEL_DEAD_LETTER_QUEUE_NAME: "staging-spool-dead" });
    expect(names.map((name) => staging.handlesQueue(name))).toEqual([false, false, true, true]);
  });

  it.each([
    [{ TUNNEL_SPOOL_QUEUE_NAME: "Spool Queue" }, "TUNNEL_SPOOL_QUEUE_NAME"],
    [{ TUNNEL_DEAD_LETTER_QUEUE_NAME: "tunnel-spool" }, "TUNNEL_DEAD_LETTER_QUEUE_NAME"],
    [{ TUNNEL_SPOOL_QUEUE_NAME: "one", TUNNEL_DEAD_LETTER_QUEUE_NAME: "one" }, "TUNNEL_DEAD_LETTER_QUEUE_NAME"],
  ])("refuses %j, naming %s", (variables, variable) => {
    expect(configRefusal(() => tunnelFromEnv({ ...SPOOL, TUNNEL_ROUTE: "/q8w3e4", ...variables }))?.variable).toBe(variable);
  });
});

describe("readTunnelSettings: the host's paths", () => {
  it.each(["/monitoring", "/Monitoring", "/monitoring/security-report", "/monitoring/*", "/monitoring/:report"])(
    "refuses a host that declares %s, where the original route is always served",
    (path) => {
      expect(configRefusal(() => readTunnelSettings({ SENTRY_DSN: TEST_DSN }, { hostPaths: [path] }))).toEqual({
        variable: "hostPaths",
        message: expect.stringContaining(`names "${path}", which takes /monitoring or /monitoring/security-report`) as unknown as string,
      });
    },
  );

  it("takes a root catch-all, pages beside the original route, and a pattern whose one value the tunnel takes", () => {
    const hostPaths = ["/*", "/monitor", "/monitoring-help", "/build/*", "/:section/:page"];
    expect(readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: "/k7q2x9/a/b", TUNNEL_SENTRY_PATHS: "off" }, { hostPaths }).hostPaths).toEqual(hostPaths);
  });
});

describe("readTunnelSettings: the defaults, written once in the README", () => {
  /** Where the settings keep each variable that has a number for its default. */
  const READ_AS: Record<string, (settings: ReturnType<typeof readTunnelSettings>) => number> = {
    TUNNEL_MAX_ENVELOPE_BYTES: (settings) => settings.maxEnvelopeBytes,
    TUNNEL_TIMEOUT_MS: (settings) => settings.timeoutMs,
  };

  it("reads an empty environment as the README's table of variables says", () => {
    const readme = readFileSync(`${import.meta.dirname}/../../README.md`, "utf8");
    // The spool's own rows are its options' (`spool/index.ts`).
    const documented = Object.fromEntries([...readme.matchAll(/^\| `(TUNNEL_(?!SPOOL)[A-Z_]+)` \| `(\d+)`/gm)].map(([, name, value]) => [name, Number(value)]));
    const read = readTunnelSettings({});
    expect(Object.keys(documented).sort()).toEqual(Object.keys(READ_AS).sort());
    for (const [name, readAs] of Object.entries(READ_AS)) expect(readAs(read), name).toBe(documented[name]);
  });
});

describe("readTunnelSettings: the routes, the DSNs and the origins", () => {
  it("derives the pages' route from the DSN, and keeps serving it and the original when another is chosen", () => {
    const derived = readTunnelSettings({ SENTRY_DSN: TEST_DSN });
    expect(derived.route).toMatch(/^\/[a-z0-9]{10}$/);
    expect(derived.routes).toEqual([derived.route, "/monitoring"]);
    const chosen = readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: " /k7q2x9 ", TUNNEL_RETIRED_ROUTES: "/a3f8c1, /b4e9d2/x" });
    expect(chosen.route).toBe("/k7q2x9");
    expect(chosen.routes).toEqual(["/k7q2x9", derived.route, "/a3f8c1", "/b4e9d2/x", "/monitoring"]);
    expect(readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: "/monitoring" }).routes).toEqual(["/monitoring", derived.route]);
  });

  it("asks for TUNNEL_ROUTE when the app's pages claim every path it could be given by default", () => {
    expect(() => readTunnelSettings({ SENTRY_DSN: TEST_DSN }, { hostPaths: ["/", "/:slug"] })).toThrow(/^TUNNEL_ROUTE must be set/);
    // Sentry's own path would shadow a page too: it is turned off.
    expect(readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: "/a/k7q2x9", TUNNEL_SENTRY_PATHS: "off" }, { hostPaths: ["/", "/:slug"] }).routes).toEqual(["/a/k7q2x9", "/monitoring"]);
  });

  it.each([
    ["TUNNEL_ROUTE", "/monitoring?o=1&p=2", "one to four segments"],
    ["TUNNEL_ROUTE", "/build/x", "would shadow /build/*, which the app serves"],
    ["TUNNEL_ROUTE", "/shop", "would shadow /shop/:item, which the app serves"],
    ["TUNNEL_ROUTE", "/api/tunnel", 'holds "tunnel"'],
    ["TUNNEL_RETIRED_ROUTES", "/k7q2x9, /x y", "one to four segments"],
  ] as const)("refuses %s=%s, naming the variable", (variable, value, problem) => {
    const read = () => readTunnelSettings({ SENTRY_DSN: TEST_DSN, [variable]: value }, { hostPaths: ["/", "/shop/:item", "/build/*", "/*"] });
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(new RegExp(`^${variable} .*${problem.replace(/[/?*]/g, "\\$&")}`));
  });

  describe("refuses two routes that would serve one path, naming the setting to change", () => {
    const derived = readTunnelSettings({ SENTRY_DSN: TEST_DSN }).route;
    it.each([
      ["TUNNEL_ROUTE over the derived route's report path", { TUNNEL_ROUTE: `${derived}/csp` }, "TUNNEL_ROUTE", `"${derived}/csp" would take envelopes at ${derived}/csp, where the route derived from SENTRY_DSN (${derived}) takes CSP reports`],
      ["a retired route over the derived route's report path", { TUNNEL_RETIRED_ROUTES: `${derived}/csp` }, "TUNNEL_RETIRED_ROUTES", `"${derived}/csp" would take envelopes at ${derived}/csp, where the route derived from SENTRY_DSN (${derived}) takes CSP reports`],
      ["a retired route over another retired route's report path", { TUNNEL_RETIRED_ROUTES: "/a3f8c1, /a3f8c1/csp" }, "TUNNEL_RETIRED_ROUTES", '"/a3f8c1/csp" would take envelopes at /a3f8c1/csp, where the retired route (/a3f8c1) takes CSP reports'],
      ["a retired route whose report path is TUNNEL_ROUTE", { TUNNEL_ROUTE: "/a3f8c1/csp", TUNNEL_RETIRED_ROUTES: "/a3f8c1" }, "TUNNEL_RETIRED_ROUTES", '"/a3f8c1" would take CSP reports at /a3f8c1/csp, where TUNNEL_ROUTE (/a3f8c1/csp) takes envelopes'],
      ["a retired route over TUNNEL_ROUTE's report path", { TUNNEL_ROUTE: "/k7q2x9", TUNNEL_RETIRED_ROUTES: "/k7q2x9/csp" }, "TUNNEL_RETIRED_ROUTES", '"/k7q2x9/csp" would take envelopes at /k7q2x9/csp, where TUNNEL_ROUTE (/k7q2x9) takes CSP reports'],
    ] as const)("%s", (_kind, variables, variable, problem) => {
      const read = () => readTunnelSettings({ SENTRY_DSN: TEST_DSN, ...variables });
      expect(read).toThrow(ConfigError);
      expect(read).toThrow(`${variable} ${problem}: one path cannot serve both`);
    });

    it("takes a route named twice, which serves the same paths", () => {
      const settings = readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: derived, TUNNEL_RETIRED_ROUTES: `${derived}, /monitoring, /k7q2x9, /k7q2x9` });
      expect(settings.routes).toEqual([derived, "/monitoring", "/k7q2x9"]);
    });
  });

  describe("serves the path Sentry's own SDK posts to with tunnel: true", () => {
    const TEAM_DSN = "https://fedcba9876543210fedcba9876543210@o1.ingest.us.sentry.io/3";

    it("for each allowed DSN, and not when TUNNEL_SENTRY_PATHS is off", () => {
      const paths = readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ALLOWED_DSNS: TEAM_DSN }).sentryPaths;
      expect(paths).toEqual([getTunnelPath(TEST_DSN)!, getTunnelPath(TEAM_DSN)]);
      expect(paths.every((path) => /^\/[0-9a-z]{1,7}$/.test(path))).toBe(true);
      expect(readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_SENTRY_PATHS: "off" }).sentryPaths).toEqual([]);
    });

    it("refuses to take a page's path, and says how to turn it off", () => {
      const read = () => readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: "/a/k7q2x9" }, { hostPaths: ["/", "/:slug"] });
      expect(read).toThrow(`TUNNEL_SENTRY_PATHS is on, and Sentry's own tunnel path for ${TEST_DSN} would shadow /:slug, which the app serves`);
      expect(read).toThrow(/turn TUNNEL_SENTRY_PATHS off$/);
      expect(readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: "/a/k7q2x9", TUNNEL_SENTRY_PATHS: "off" }, { hostPaths: ["/", "/:slug"] }).sentryPaths).toEqual([]);
    });

    it("takes a route that is the same path, which serves envelopes too", () => {
      const path = getTunnelPath(TEST_DSN)!;
      expect(readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ROUTE: path })).toMatchObject({ route: path, sentryPaths: [path] });
    });
  });

  it("normalises origins", () => {
    const settings = readTunnelSettings({ TUNNEL_ALLOWED_ORIGINS: "https://a.example.com/, http://localhost:3000" });
    expect(settings.allowedOrigins).toEqual(["https://a.example.com", "http://localhost:3000"]);
  });

  it("allows the app's own DSN and the extra ones, each in its canonical form, and takes a development origin", () => {
    const settings = readTunnelSettings({ SENTRY_DSN: TEST_DSN, TUNNEL_ALLOWED_DSNS: " https://k:legacysecret@sentry.example.com/7 , ", TUNNEL_UPSTREAM_ORIGIN: "http://127.0.0.1:8969" });
    expect(settings.allowedDsns.map((dsn) => dsn.text)).toEqual([TEST_DSN, "https://k@sentry.example.com/7"]);
    expect(settings.upstreamOrigin).toBe("http://127.0.0.1:8969");
  });

  it.each([
    ["SENTRY_DSN", "not a dsn"],
    ["SENTRY_DSN", "https://o1.ingest.sentry.io/2"],
    ["TUNNEL_ALLOWED_DSNS", `${TEST_DSN},https://k@host/notaproject`],
    ["TUNNEL_ALLOWED_DSNS", `${TEST_DSN}abc`],
    ["TUNNEL_MAX_ENVELOPE_BYTES", "20MB"],
    ["TUNNEL_MAX_ENVELOPE_BYTES", "0"],
    ["TUNNEL_TIMEOUT_MS", "-5"],
    ["TUNNEL_ALLOWED_ORIGINS", "*"],
    ["TUNNEL_ALLOWED_ORIGINS", "https://a.example.com/path"],
    ["TUNNEL_UPSTREAM_ORIGIN", "localhost:8969"],
    ["TUNNEL_SPOOL_MAX_AGE_SECONDS", "an hour"],
  ] as const)("names %s when it is %j", (variable, value) => {
    expect(configRefusal(() => tunnelFromEnv({ ...SPOOL, [variable]: value }))).toEqual({ variable, message: expect.stringMatching(new RegExp(`^${variable} `)) });
  });
});
