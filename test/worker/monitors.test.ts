import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type RequestListener } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { PROBE_MONITOR_NAME, SPOOL_MONITOR_SLUG } from "../../worker/operator-monitors";
import { parseEnvelope } from "../support/envelopes";
import { root } from "../support/workerd";
import { useIngestAndWorker } from "../support/ingest-and-worker";
import { runProjectScript } from "../support/npm-script";
import { SentryApiStandIn } from "../support/sentry-api";
import { APP_DSN, APP_ROUTE } from "../support/worker";

const ORIGIN = "https://app.example.com";

const monitors = (args: string[], env: Record<string, string | undefined>) => runProjectScript("monitors", args, env);

describe("npm run monitors: Sentry's uptime probe and the spool's cron monitor, from the repository's files (issue 47)", () => {
  let sentry: SentryApiStandIn;
  const { ingest, worker } = useIngestAndWorker({}, { rateLimit: { limit: 1_000_000, period: 10 } });
  const operator = () => ({ SENTRY_AUTH_TOKEN: sentry.token, SENTRY_ORG: sentry.org, SENTRY_PROJECT: "web", SENTRY_URL: sentry.url, SENTRY_DSN: APP_DSN });

  beforeAll(async () => {
    sentry = await SentryApiStandIn.start();
  });
  afterAll(async () => {
    await sentry?.stop();
  });

  it("creates both monitors once, then updates the same two, with the fields Sentry documents", async () => {
    const first = await monitors(["--origin", ORIGIN], operator());
    expect(first).toMatchObject({ code: 0, stderr: "" });
    expect(first.stdout).toContain(`Uptime monitor "${PROBE_MONITOR_NAME}" created (id 1): POST ${ORIGIN}${APP_ROUTE} every 300 s`);
    expect(first.stdout).toContain(`Cron monitor ${SPOOL_MONITOR_SLUG} created`);
    const second = await monitors(["--origin", ORIGIN, "--interval", "60"], operator());
    expect(second).toMatchObject({ code: 0, stderr: "" });
    expect(second.stdout).toContain(`Uptime monitor "${PROBE_MONITOR_NAME}" updated (id 1)`);
    expect(second.stdout).toContain(`Cron monitor ${SPOOL_MONITOR_SLUG} updated`);

    // Every request passed the stand-in's checks of Sentry's documented fields.
    expect(sentry.calls.filter((call) => call.status >= 400 && call.status !== 404)).toEqual([]);
    expect(sentry.calls.filter((call) => call.method !== "GET").map((call) => `${call.method} ${call.path}`)).toEqual([
      "POST /api/0/projects/acme/web/uptime/",
      "POST /api/0/organizations/acme/monitors/",
      "PUT /api/0/projects/acme/web/uptime/1/",
      `PUT /api/0/organizations/acme/monitors/${SPOOL_MONITOR_SLUG}/`,
    ]);
    expect(sentry.uptime).toEqual([
      expect.objectContaining({ name: PROBE_MONITOR_NAME, url: `${ORIGIN}${APP_ROUTE}`, method: "POST", interval_seconds: 60, timeout_ms: 10_000, environment: "production" }),
    ]);
    expect(sentry.monitors).toEqual([
      expect.objectContaining({
        slug: SPOOL_MONITOR_SLUG,
        project: "web",
        config: { schedule_type: "crontab", schedule: "*/5 * * * *", checkin_margin: 5, max_runtime: 1, timezone: "Etc/UTC", failure_issue_threshold: 1, recovery_threshold: 1 },
      }),
    ]);
  });

  it("has the uptime monitor send what the tunnel delivers and Sentry takes with a 2xx, making no event", async () => {
    const [probe] = sentry.uptime;
    const headers = Object.fromEntries(probe!.headers as [string, string][]);
    const answer = await worker.post(Buffer.from(probe!.body as string), headers, new URL(probe!.url as string).pathname);
    expect(answer.status).toBe(200);
    const delivered = ingest.deliveries.find((delivery) => delivery.body.toString("utf8") === probe!.body);
    expect(delivered?.url).toBe("/api/4502/envelope/?hsts=0");
    expect(parseEnvelope(delivered!.body).items.map((item) => item.header.type)).toEqual(["client_report"]);
  });

  it("says in one line what is missing, and changes nothing", async () => {
    const calls = sentry.calls.length;
    const cases: [string[], Record<string, string>, string][] = [
      [[], operator(), "needs --origin"],
      [["--origin", "http://app.example.com"], operator(), "needs --origin"],
      [["--origin", ORIGIN], { ...operator(), SENTRY_AUTH_TOKEN: "" }, "needs SENTRY_AUTH_TOKEN"],
      [["--origin", ORIGIN], { ...operator(), SENTRY_DSN: "" }, "needs SENTRY_DSN"],
      [["--origin", ORIGIN, "--interval", "90"], operator(), "--interval must be one of"],
    ];
    for (const [args, env, said] of cases) {
      const { code, stdout, stderr } = await monitors(args, env);
      expect({ code, stdout }, said).toEqual({ code: 2, stdout: "" });
      expect(stderr.trim().split("\n"), said).toEqual([expect.stringContaining(said)]);
    }
    const refused = await monitors(["--origin", ORIGIN], { ...operator(), SENTRY_AUTH_TOKEN: "wrong" });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toEqual([expect.stringContaining("answered GET /organizations/acme/uptime/")]);
    expect(sentry.calls.slice(calls).filter((call) => call.method !== "GET")).toEqual([]);
    // A proxy's page where Sentry's API should be: one line, as what came.
    const proxy = createServer((_request, response) => response.writeHead(200, { "content-type": "text/html" }).end("<html>Captive portal</html>"));
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const page = await monitors(["--origin", ORIGIN], { ...operator(), SENTRY_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` });
      expect(page.code).toBe(1);
      expect(page.stderr.trim().split("\n")).toEqual([expect.stringContaining("with 200 but no JSON: <html>Captive portal</html>")]);
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it("prints a broken API's answer without the token it echoes or the escape sequences it holds, and reads no more than a bound of it", async () => {
    const answers: RequestListener[] = [
      (request, response) =>
        // Raw, as a broken server sends it: JSON would have escaped the control characters.
        void response.writeHead(500, { "content-type": "application/json" }).end(`{"detail":"bad ${request.headers.authorization}\u001b]0;owned\u0007\u001b[2J\u009b31m"}`),
      (_request, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        const chunk = "x".repeat(64 * 1024);
        const more = () => {
          while (response.write(chunk));
        };
        response.on("drain", more);
        response.on("close", () => response.off("drain", more));
        more();
      },
    ];
    const said: string[] = [];
    for (const answer of answers) {
      const api = createServer(answer);
      await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
      try {
        const run = await monitors(["--origin", ORIGIN], { ...operator(), SENTRY_URL: `http://127.0.0.1:${(api.address() as AddressInfo).port}` });
        expect(run.code).toBe(1);
        said.push(run.stderr.trim());
      } finally {
        api.closeAllConnections();
        await new Promise<void>((resolve) => api.close(() => resolve()));
      }
    }
    expect(said[0]).toContain("bad Bearer [redacted]]0;owned[2J31m");
    expect(said[0]).not.toContain(sentry.token);
    expect(said[0]).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(said[1]).toMatch(/could not be read: its answer is over 4194304 bytes, and was not read further$/);
  });

  it("creates no spool monitor for a Worker with no spool, and the heartbeat's for the cron its trigger has", async () => {
    const wrangler = readFileSync(join(root, "wrangler.toml"), "utf8")
      .replace('main = "build/index.js"', `main = "${root}build/index.js"`)
      .replace('directory = "public"', `directory = "${root}public"`);
    const configWith = (toml: string) => {
      const file = join(mkdtempSync(join(tmpdir(), "monitors-")), "wrangler.toml");
      writeFileSync(file, toml);
      return file;
    };
    const everyTen = configWith(wrangler.replace('crons = ["*/5 * * * *"]', 'crons = ["*/10 * * * *"]'));
    expect((await monitors(["--origin", ORIGIN, "--config", everyTen], operator())).code).toBe(0);
    expect(sentry.monitors).toEqual([expect.objectContaining({ slug: SPOOL_MONITOR_SLUG, config: expect.objectContaining({ schedule: "*/10 * * * *" }) })]);

    const calls = sentry.calls.length;
    const noSpool = configWith(wrangler.replace(/\[\[queues\.producers\]\][^[]*/g, ""));
    expect(readFileSync(noSpool, "utf8")).not.toContain("queues.producers");
    const run = await monitors(["--origin", ORIGIN, "--config", noSpool], operator());
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expect(run.stdout).toContain(`No cron monitor ${SPOOL_MONITOR_SLUG}: wrangler.toml binds no TUNNEL_SPOOL queue`);
    expect(sentry.calls.slice(calls).filter((call) => call.path.includes("/monitors/"))).toEqual([]);
  });

  it("sends the probe once to a running app with --try, as the monitor will", async () => {
    const { code, stdout } = await monitors(["--try", worker.origin], { SENTRY_DSN: APP_DSN });
    expect(code).toBe(0);
    expect(stdout).toContain(`POST ${worker.origin}${APP_ROUTE}: 200`);
  });
});
