import { EVERY_CLIENT, TEST_DSN } from "@edge-monitoring/tunnel/testing";
import { describe, expect, it } from "vitest";

import { appTunnel } from "../worker/app-tunnel";
import { wranglerWorker } from "../scripts/wrangler-config";
import { ConfigError, readConfig } from "./config.server";

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
    expect(config.upstreamOrigin).toBeUndefined();
  });

  it("sends the Worker's own events to the development origin the tunnel's go to", () => {
    const config = readConfig({ SENTRY_DSN: TEST_DSN, TUNNEL_UPSTREAM_ORIGIN: "http://127.0.0.1:8969" });
    expect(config.sentry).toMatchObject({
      dsn: TEST_DSN,
      project: { org: "4501", region: "us", project: "4502" },
      workerEnvelopeUrl: "http://127.0.0.1:8969/api/4502/envelope/?hsts=0",
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

  it.each([
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
});

describe("wrangler.toml", () => {
  const declared = wranglerWorker(new URL("../wrangler.toml", import.meta.url).pathname);
  const vars = declared.bindings as Record<string, string>;

  /** The app's tunnel as `wrangler.toml` configures it, every binding it declares a stand-in. */
  const tunnel = () =>
    appTunnel(
      { ...vars, TUNNEL_RATE_LIMITER: EVERY_CLIENT, TUNNEL_SPOOL_CLIENT_BUDGET: EVERY_CLIENT, TUNNEL_SPOOL_TOTAL_BUDGET: EVERY_CLIENT, TUNNEL_SPOOL: { send: async () => {} } },
      [],
    );

  it("tells limited clients to wait exactly the rate limiter's period", () => {
    expect(tunnel().clientShare.periodSeconds).toBe(declared.ratelimits.TUNNEL_RATE_LIMITER!.simple.period);
  });

  it("has the Worker consume the spool and its dead-letter queue under the names its settings give", () => {
    const spoolQueue = declared.queueProducers.TUNNEL_SPOOL!.queueName;
    const deadLetterQueue = declared.queueConsumers[spoolQueue]!.deadLetterQueue!;
    expect([tunnel().handlesQueue(spoolQueue), tunnel().handlesQueue(deadLetterQueue)]).toEqual([true, true]);
    expect(Object.keys(declared.queueConsumers)).toContain(deadLetterQueue);
  });

  it("binds every limit the tunnel requires while TUNNEL_RATE_LIMITING is on", () => {
    expect(tunnel().describe().rate_limiter).toMatch(/^on: /);
    expect(Object.keys(declared.ratelimits).sort()).toEqual(["TUNNEL_RATE_LIMITER", "TUNNEL_SPOOL_CLIENT_BUDGET", "TUNNEL_SPOOL_TOTAL_BUDGET"]);
  });

  it("declares one Cron Trigger, the spool's heartbeat: the ad-block lists are watched beside the Worker, not in it", () => {
    expect(declared.crons).toEqual(["*/5 * * * *"]);
  });
});
