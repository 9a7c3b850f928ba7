import { describe, expect, it } from "vitest";

import { ConfigError, readConfig } from "./config.server";

const DSN = "https://0123456789abcdef0123456789abcdef@o1.ingest.us.sentry.io/2";

describe("readConfig", () => {
  it("has working defaults for an empty environment", () => {
    const config = readConfig({});
    expect(config.sentry).toEqual({
      dsn: undefined,
      project: undefined,
      environment: "production",
      tracesSampleRate: 1,
      tracePropagationTargets: [],
      workerEnvelopeUrl: undefined,
    });
    expect(config.tunnel.maxEnvelopeBytes).toBe(20_971_520);
    expect(config.tunnel.upstreamTimeoutMs).toBe(30_000);
    expect(config.tunnel.allowedDsns.size).toBe(0);
    expect(config.tunnel.allowedOrigins.size).toBe(0);
  });

  it("allows the app's own DSN and the extra ones, pointed at the development origin when one is set", () => {
    const config = readConfig({
      SENTRY_DSN: DSN,
      TUNNEL_ALLOWED_DSNS: " https://k@sentry.example.com/7 , ",
      TUNNEL_UPSTREAM_ORIGIN: "http://127.0.0.1:8969",
    });
    expect([...config.tunnel.allowedDsns.values()].map((dsn) => dsn.upstreamUrl)).toEqual([
      "http://127.0.0.1:8969/api/2/envelope/?hsts=0",
      "http://127.0.0.1:8969/api/7/envelope/",
    ]);
    expect(config.sentry.workerEnvelopeUrl).toBe("http://127.0.0.1:8969/api/2/envelope/?hsts=0");
  });

  it("normalises origins", () => {
    const config = readConfig({ TUNNEL_ALLOWED_ORIGINS: "https://a.example.com/, http://localhost:3000" });
    expect([...config.tunnel.allowedOrigins]).toEqual(["https://a.example.com", "http://localhost:3000"]);
  });

  it.each([
    ["SENTRY_DSN", "not a dsn"],
    ["SENTRY_DSN", "https://o1.ingest.sentry.io/2"],
    ["TUNNEL_ALLOWED_DSNS", `${DSN},https://k@host/notaproject`],
    ["TUNNEL_MAX_ENVELOPE_BYTES", "20MB"],
    ["TUNNEL_MAX_ENVELOPE_BYTES", "0"],
    ["TUNNEL_UPSTREAM_TIMEOUT_MS", "-5"],
    ["TUNNEL_ALLOWED_ORIGINS", "*"],
    ["TUNNEL_ALLOWED_ORIGINS", "https://a.example.com/path"],
    ["TUNNEL_UPSTREAM_ORIGIN", "localhost:8969"],
    ["SENTRY_TRACES_SAMPLE_RATE", "1.5"],
    ["SENTRY_TRACES_SAMPLE_RATE", "all"],
    ["SENTRY_TRACE_PROPAGATION_TARGETS", "api.example.com"],
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
});

describe("wrangler.toml", () => {
  it("tells limited clients to wait exactly the rate limiter's period", async () => {
    const { unstable_readConfig } = await import("wrangler");
    const config = unstable_readConfig({ config: new URL("../wrangler.toml", import.meta.url).pathname });
    const [limiter] = config.ratelimits as { simple: { period: number } }[];
    expect(readConfig(config.vars as Record<string, string>).tunnel.rateLimitPeriodSeconds).toBe(limiter!.simple.period);
  });
});
