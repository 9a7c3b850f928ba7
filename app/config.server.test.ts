import { readFileSync } from "node:fs";

import { getTunnelPath } from "sentry-core-11";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";

import { ConfigError, readConfig } from "./config.server";

const DSN = "https://0123456789abcdef0123456789abcdef@o1.ingest.us.sentry.io/2";

describe("readConfig", () => {
  it("has working defaults for an empty environment", () => {
    const config = readConfig({});
    expect(config.sentry).toEqual({
      dsn: undefined,
      project: undefined,
      publicKey: undefined,
      environment: "production",
      tracesSampleRate: 1,
      tracePropagationTargets: [],
      workerEnvelopeUrl: undefined,
    });
    expect(config.tunnel).toEqual({
      allowedDsns: [],
      allowedOrigins: [],
      hostPaths: [],
      maxEnvelopeBytes: 20_971_520,
      timeoutMs: 30_000,
      upstreamOrigin: undefined,
      rateLimitPeriodSeconds: 10,
      rateLimiting: true,
      spoolQueue: "tunnel-spool",
      deadLetterQueue: "tunnel-spool-dead",
      spoolMaxRetries: 5,
      spoolRetrySeconds: 10,
      spoolMaxAgeSeconds: 3600,
      logForwarded: false,
      ownProject: undefined,
      route: "/monitoring",
      routes: ["/monitoring"],
      sentryPaths: [],
    });
  });

  it("derives the pages' route from the DSN, and keeps serving it and the original when another is chosen", () => {
    const derived = readConfig({ SENTRY_DSN: DSN }).tunnel;
    expect(derived.route).toMatch(/^\/[a-z0-9]{10}$/);
    expect(derived.routes).toEqual([derived.route, "/monitoring"]);
    const chosen = readConfig({ SENTRY_DSN: DSN, TUNNEL_ROUTE: " /k7q2x9 ", TUNNEL_RETIRED_ROUTES: "/a3f8c1, /b4e9d2/x" }).tunnel;
    expect(chosen.route).toBe("/k7q2x9");
    expect(chosen.routes).toEqual(["/k7q2x9", derived.route, "/a3f8c1", "/b4e9d2/x", "/monitoring"]);
    expect(readConfig({ SENTRY_DSN: DSN, TUNNEL_ROUTE: "/monitoring" }).tunnel.routes).toEqual(["/monitoring", derived.route]);
  });

  it("asks for TUNNEL_ROUTE when the app's pages claim every path it could be given by default", () => {
    expect(() => readConfig({ SENTRY_DSN: DSN }, ["/", "/:slug"])).toThrow(/^TUNNEL_ROUTE must be set/);
    // Sentry's own path would shadow a page too: it is turned off.
    expect(readConfig({ SENTRY_DSN: DSN, TUNNEL_ROUTE: "/a/k7q2x9", TUNNEL_SENTRY_PATHS: "off" }, ["/", "/:slug"]).tunnel.routes).toEqual(["/a/k7q2x9", "/monitoring"]);
  });

  it.each([
    ["TUNNEL_ROUTE", "/monitoring?o=1&p=2", "one to four segments"],
    ["TUNNEL_ROUTE", "/build/x", "would shadow /build/*, which the app serves"],
    ["TUNNEL_ROUTE", "/shop", "would shadow /shop/:item, which the app serves"],
    ["TUNNEL_ROUTE", "/api/tunnel", 'holds "tunnel"'],
    ["TUNNEL_RETIRED_ROUTES", "/k7q2x9, /x y", "one to four segments"],
  ] as const)("refuses %s=%s, naming the variable", (variable, value, problem) => {
    const read = () => readConfig({ SENTRY_DSN: DSN, [variable]: value }, ["/", "/shop/:item", "/build/*", "/*"]);
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(new RegExp(`^${variable} .*${problem.replace(/[/?*]/g, "\\$&")}`));
  });

  describe("refuses two routes that would serve one path, naming the setting to change", () => {
    const derived = readConfig({ SENTRY_DSN: DSN }).tunnel.route;
    it.each([
      ["TUNNEL_ROUTE over the derived route's report path", { TUNNEL_ROUTE: `${derived}/csp` }, "TUNNEL_ROUTE", `"${derived}/csp" would take envelopes at ${derived}/csp, where the route derived from SENTRY_DSN (${derived}) takes CSP reports`],
      ["a retired route over the derived route's report path", { TUNNEL_RETIRED_ROUTES: `${derived}/csp` }, "TUNNEL_RETIRED_ROUTES", `"${derived}/csp" would take envelopes at ${derived}/csp, where the route derived from SENTRY_DSN (${derived}) takes CSP reports`],
      ["a retired route over another retired route's report path", { TUNNEL_RETIRED_ROUTES: "/a3f8c1, /a3f8c1/csp" }, "TUNNEL_RETIRED_ROUTES", '"/a3f8c1/csp" would take envelopes at /a3f8c1/csp, where the retired route (/a3f8c1) takes CSP reports'],
      ["a retired route whose report path is TUNNEL_ROUTE", { TUNNEL_ROUTE: "/a3f8c1/csp", TUNNEL_RETIRED_ROUTES: "/a3f8c1" }, "TUNNEL_RETIRED_ROUTES", '"/a3f8c1" would take CSP reports at /a3f8c1/csp, where TUNNEL_ROUTE (/a3f8c1/csp) takes envelopes'],
      ["a retired route over TUNNEL_ROUTE's report path", { TUNNEL_ROUTE: "/k7q2x9", TUNNEL_RETIRED_ROUTES: "/k7q2x9/csp" }, "TUNNEL_RETIRED_ROUTES", '"/k7q2x9/csp" would take envelopes at /k7q2x9/csp, where TUNNEL_ROUTE (/k7q2x9) takes CSP reports'],
    ] as const)("%s", (_kind, variables, variable, problem) => {
      const read = () => readConfig({ SENTRY_DSN: DSN, ...variables });
      expect(read).toThrow(ConfigError);
      expect(read).toThrow(`${variable} ${problem}: one path cannot serve both`);
    });

    it("takes a route named twice, which serves the same paths", () => {
      const config = readConfig({ SENTRY_DSN: DSN, TUNNEL_ROUTE: derived, TUNNEL_RETIRED_ROUTES: `${derived}, /monitoring, /k7q2x9, /k7q2x9` });
      expect(config.tunnel.routes).toEqual([derived, "/monitoring", "/k7q2x9"]);
    });
  });

  describe("serves the path Sentry's own SDK posts to with tunnel: true", () => {
    const TEAM_DSN = "https://fedcba9876543210fedcba9876543210@o1.ingest.us.sentry.io/3";

    it("for each allowed DSN, and not when TUNNEL_SENTRY_PATHS is off", () => {
      const paths = readConfig({ SENTRY_DSN: DSN, TUNNEL_ALLOWED_DSNS: TEAM_DSN }).tunnel.sentryPaths;
      expect(paths).toEqual([getTunnelPath(DSN)!, getTunnelPath(TEAM_DSN)]);
      expect(paths.every((path) => /^\/[0-9a-z]{1,7}$/.test(path))).toBe(true);
      expect(readConfig({ SENTRY_DSN: DSN, TUNNEL_SENTRY_PATHS: "off" }).tunnel.sentryPaths).toEqual([]);
    });

    it("refuses to take a page's path, and says how to turn it off", () => {
      const read = () => readConfig({ SENTRY_DSN: DSN, TUNNEL_ROUTE: "/a/k7q2x9" }, ["/", "/:slug"]);
      expect(read).toThrow(`TUNNEL_SENTRY_PATHS is on, and Sentry's own tunnel path for ${DSN} would shadow /:slug, which the app serves`);
      expect(read).toThrow(/set TUNNEL_SENTRY_PATHS=off$/);
      expect(readConfig({ SENTRY_DSN: DSN, TUNNEL_ROUTE: "/a/k7q2x9", TUNNEL_SENTRY_PATHS: "off" }, ["/", "/:slug"]).tunnel.sentryPaths).toEqual([]);
    });

    it("takes a route that is the same path, which serves envelopes too", () => {
      const path = getTunnelPath(DSN)!;
      expect(readConfig({ SENTRY_DSN: DSN, TUNNEL_ROUTE: path }).tunnel).toMatchObject({ route: path, sentryPaths: [path] });
    });
  });

  it("allows the app's own DSN and the extra ones, and sends the Worker's events to the development origin", () => {
    const config = readConfig({
      SENTRY_DSN: DSN,
      TUNNEL_ALLOWED_DSNS: " https://k:legacysecret@sentry.example.com/7 , ",
      TUNNEL_UPSTREAM_ORIGIN: "http://127.0.0.1:8969",
    });
    expect(config.tunnel.allowedDsns.map((dsn) => dsn.text)).toEqual([DSN, "https://k@sentry.example.com/7"]);
    expect(config.tunnel.upstreamOrigin).toBe("http://127.0.0.1:8969");
    expect(config.sentry).toMatchObject({
      dsn: DSN,
      project: { org: "1", region: "us", projectId: "2" },
      workerEnvelopeUrl: "http://127.0.0.1:8969/api/2/envelope/?hsts=0",
    });
  });

  it.each([
    [{}, false],
    [{ SENTRY_ENVIRONMENT: "production" }, false],
    [{ SENTRY_ENVIRONMENT: "production", SENTRY_SELF_TEST: "on" }, true],
    [{ SENTRY_ENVIRONMENT: "production", SENTRY_SELF_TEST: " ON " }, true],
    [{ SENTRY_ENVIRONMENT: "development" }, true],
    [{ SENTRY_ENVIRONMENT: "staging" }, true],
    [{ SENTRY_ENVIRONMENT: "development", SENTRY_SELF_TEST: "off" }, false],
  ])("turns the self-test on only outside production unless told: %j gives %s", (env, on) => {
    expect(readConfig(env).selfTest).toBe(on);
  });

  it("lets pages fetch from the origins they trace and the ones named for the CSP, each once", () => {
    const config = readConfig({ SENTRY_TRACE_PROPAGATION_TARGETS: "https://api.example.com", CSP_CONNECT_ORIGINS: "https://api.example.com/, https://cdn.example.com" });
    expect(config.connectOrigins).toEqual(["https://api.example.com", "https://cdn.example.com"]);
  });

  it("normalises origins", () => {
    const config = readConfig({ TUNNEL_ALLOWED_ORIGINS: "https://a.example.com/, http://localhost:3000" });
    expect(config.tunnel.allowedOrigins).toEqual(["https://a.example.com", "http://localhost:3000"]);
  });

  it.each([
    ["SENTRY_DSN", "not a dsn"],
    ["SENTRY_DSN", "https://o1.ingest.sentry.io/2"],
    ["TUNNEL_ALLOWED_DSNS", `${DSN},https://k@host/notaproject`],
    ["TUNNEL_ALLOWED_DSNS", `${DSN}abc`],
    ["TUNNEL_MAX_ENVELOPE_BYTES", "20MB"],
    ["TUNNEL_MAX_ENVELOPE_BYTES", "0"],
    ["TUNNEL_TIMEOUT_MS", "-5"],
    ["TUNNEL_ALLOWED_ORIGINS", "*"],
    ["TUNNEL_ALLOWED_ORIGINS", "https://a.example.com/path"],
    ["TUNNEL_UPSTREAM_ORIGIN", "localhost:8969"],
    ["SENTRY_TRACES_SAMPLE_RATE", "1.5"],
    ["SENTRY_TRACES_SAMPLE_RATE", "all"],
    ["SENTRY_TRACE_PROPAGATION_TARGETS", "api.example.com"],
    ["SENTRY_SELF_TEST", "yes"],
    ["CSP_CONNECT_ORIGINS", "api.example.com"],
  ] as const)("names %s when it is %j", (variable, value) => {
    let thrown: unknown;
    try {
      readConfig({ [variable]: value });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe(variable);
    expect((thrown as ConfigError).message).toMatch(new RegExp(`^${variable} `));
  });

  it("refuses the timeout's old name rather than run on the default", () => {
    expect(() => readConfig({ TUNNEL_UPSTREAM_TIMEOUT_MS: "5000" } as Partial<Record<string, string>>)).toThrow(
      "TUNNEL_TIMEOUT_MS replaces TUNNEL_UPSTREAM_TIMEOUT_MS, which is still set: rename it",
    );
  });
});

describe("wrangler.toml", () => {
  // Read as a file, not through wrangler: importing wrangler took over vitest's 5 s under load.
  const config = parse(readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8")) as {
    vars: Record<string, string>;
    ratelimits: { name: string; simple: { period: number } }[];
    queues: { producers: { queue: string; binding: string }[]; consumers: { queue: string; dead_letter_queue?: string; max_retries?: number }[] };
  };

  it("tells limited clients to wait exactly the rate limiter's period", () => {
    const [limiter] = config.ratelimits;
    expect(readConfig(config.vars).tunnel.rateLimitPeriodSeconds).toBe(limiter!.simple.period);
  });

  it("has the Worker consume the spool and its dead-letter queue under the names its settings give", () => {
    const { spoolQueue, deadLetterQueue } = readConfig(config.vars).tunnel;
    const { consumers, producers } = config.queues;
    expect(producers.find((producer) => producer.binding === "TUNNEL_SPOOL")?.queue).toBe(spoolQueue);
    expect(consumers.find((consumer) => consumer.queue === spoolQueue)?.dead_letter_queue).toBe(deadLetterQueue);
    expect(consumers.map((consumer) => consumer.queue)).toContain(deadLetterQueue);
  });

  it("has the consumer send a held envelope again as a new message before the queue's max_retries would dead-letter it", () => {
    const { spoolQueue, spoolMaxRetries } = readConfig(config.vars).tunnel;
    expect(config.queues.consumers.find((consumer) => consumer.queue === spoolQueue)?.max_retries).toBe(spoolMaxRetries);
  });

  it("binds every limit the tunnel requires while TUNNEL_RATE_LIMITING is on", () => {
    expect(readConfig(config.vars).tunnel.rateLimiting).toBe(true);
    expect(config.ratelimits.map((limiter) => limiter.name).sort()).toEqual(["TUNNEL_RATE_LIMITER", "TUNNEL_SPOOL_CLIENT_BUDGET", "TUNNEL_SPOOL_TOTAL_BUDGET"]);
  });
});
