// npm run monitors -- --origin https://app.example.com [--env NAME] [--config FILE] [--interval SECONDS]
// npm run monitors -- --try http://localhost:8787
//
// Creates, or updates, the two Sentry monitors that tell an operator the tunnel stopped delivering
// without anyone looking (docs/operating.md, "Told without looking"), through Sentry's API:
// - an uptime monitor that POSTs an envelope holding only an empty client report through the
//   route the pages post to, at the site's public origin, and fails on anything but a 2xx;
// - the cron monitor the spool's heartbeat checks in to, on the Cron Trigger that runs it (every
//   wrangler.toml's), when wrangler.toml binds a spool at all.
// Run it again after any change: it finds both by name and updates them. `--try` sends the probe's
// envelope once to a running app instead, with the variables `npm start` gives it (there, it lands
// in Spotlight).
import { parseArgs } from "node:util";

import { ConfigError, createTunnel, optionsFromEnv, type TunnelEnv } from "@edge-monitoring/tunnel";

import { PLACEHOLDER_DSN } from "../app/monitoring/local-defaults.ts";
import { PROBE_MONITOR_NAME, probeEnvelope, SPOOL_MONITOR_SLUG, spoolMonitorConfig } from "../worker/operator-monitors.ts";
import { boundedText, printableLine } from "./api-answer.ts";
import { localVariables } from "./local-settings.ts";
import { wranglerWorker } from "./wrangler-config.ts";

/** Sentry's uptime intervals, in seconds. */
const INTERVALS = [60, 300, 600, 1200, 1800, 3600];
/** Sentry's limit on an uptime check's request: its line, headers and body, in bytes. */
const MAX_CHECK_REQUEST_BYTES = 1000;
const PROBE_HEADERS: [string, string][] = [["Content-Type", "application/x-sentry-envelope"]];

const { values } = parseArgs({
  options: { origin: { type: "string" }, try: { type: "string" }, env: { type: "string" }, config: { type: "string", default: "wrangler.toml" }, interval: { type: "string", default: "300" } },
  allowPositionals: false,
  strict: true,
});

/** Said in one line, and the command ends with `code`. */
class Refusal extends Error {
  readonly code: number;
  constructor(message: string, code = 2) {
    super(message);
    this.code = code;
  }
}

try {
  await main();
} catch (error) {
  if (!(error instanceof Refusal || error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(error instanceof Refusal ? error.code : 2);
}

async function main(): Promise<void> {
  const declared = wranglerWorker(values.config, values.env);
  // Tried locally, the app's variables are those `npm start` gives it: the developer's, else its placeholder DSN.
  const vars: Record<string, string> = values.try ? { SENTRY_DSN: PLACEHOLDER_DSN, ...localVariables() } : (declared.bindings as Record<string, string>);
  if (process.env.SENTRY_DSN) vars.SENTRY_DSN = process.env.SENTRY_DSN;
  const dsn = vars.SENTRY_DSN;
  if (!dsn) throw new Refusal("npm run monitors needs SENTRY_DSN, the DSN the pages report with (the probe's envelope names it): set it in the environment, or in wrangler.toml's [vars]");
  // Built only to name its route: no request reaches it, so it needs no limiter.
  const route = createTunnel(optionsFromEnv({ ...(vars as TunnelEnv), TUNNEL_RATE_LIMITING: "off" })).pageUrl();
  if (!route) throw new Refusal(`SENTRY_DSN ${dsn} is not a DSN the tunnel forwards for`);
  const body = probeEnvelope(dsn);
  if (values.try) {
    if (!URL.canParse(values.try)) throw new Refusal(`--try takes the running app's origin, such as http://localhost:8787, not "${values.try}"`);
    return tryProbe(new URL(route, values.try), body);
  }

  const origin = values.origin && URL.canParse(values.origin) ? new URL(values.origin) : undefined;
  if (!origin || origin.protocol !== "https:" || origin.pathname !== "/" || origin.search) {
    throw new Refusal("npm run monitors needs --origin, the site's public origin, where Sentry's uptime checker reaches it: https://app.example.com");
  }
  const token = process.env.SENTRY_AUTH_TOKEN;
  const org = process.env.SENTRY_ORG;
  const project = process.env.SENTRY_PROJECT;
  if (!token || !org || !project) {
    throw new Refusal("npm run monitors needs SENTRY_AUTH_TOKEN (with alerts:write and project:write), SENTRY_ORG and SENTRY_PROJECT, as sentry-cli reads them");
  }
  const interval = Number(values.interval);
  if (!INTERVALS.includes(interval)) throw new Refusal(`--interval must be one of Sentry's uptime intervals: ${INTERVALS.join(", ")} seconds`);
  // The Worker's scheduled() runs the heartbeat on its trigger.
  const [cron] = declared.crons;
  const spoolBound = "TUNNEL_SPOOL" in declared.queueProducers;
  if (spoolBound && !cron) throw new Refusal("wrangler.toml binds a spool but has no Cron Trigger for its heartbeat in [triggers] crons: its cron monitor would only ever miss");

  const sentry = sentryApi((process.env.SENTRY_URL ?? "https://sentry.io").replace(/\/+$/, ""), token);
  await upsertProbe(sentry, { org, project, probeUrl: new URL(route, origin).href, body, interval, environment: vars.SENTRY_ENVIRONMENT || "production" });
  if (spoolBound && cron) await upsertHeartbeatMonitor(sentry, { org, project, cron });
  else console.log(`No cron monitor ${SPOOL_MONITOR_SLUG}: wrangler.toml binds no TUNNEL_SPOOL queue, so there is no spool and no heartbeat to watch`);
}

type SentryApi = ReturnType<typeof sentryApi>;

/** The uptime monitor, found by its name in the project, created or updated. */
async function upsertProbe(
  sentry: SentryApi,
  { org, project, probeUrl, body, interval, environment }: { org: string; project: string; probeUrl: string; body: string; interval: number; environment: string },
): Promise<void> {
  const uptime = { name: PROBE_MONITOR_NAME, url: probeUrl, method: "POST", headers: PROBE_HEADERS, body, interval_seconds: interval, timeout_ms: 10_000, environment, status: "active" };
  const size = checkRequestBytes(uptime.method, uptime.url, uptime.headers, uptime.body);
  if (size > MAX_CHECK_REQUEST_BYTES) throw new Refusal(`The probe's request is ${size} bytes, over Sentry's ${MAX_CHECK_REQUEST_BYTES} for an uptime check`);
  const listed = await sentry<{ id: string; name: string; projectSlug: string }[]>("GET", `/organizations/${org}/uptime/?query=${encodeURIComponent(PROBE_MONITOR_NAME)}`);
  const existing = listed.find((monitor) => monitor.name === PROBE_MONITOR_NAME && monitor.projectSlug === project);
  const saved = existing
    ? await sentry<{ id: string }>("PUT", `/projects/${org}/${project}/uptime/${existing.id}/`, uptime)
    : await sentry<{ id: string }>("POST", `/projects/${org}/${project}/uptime/`, uptime);
  console.log(`Uptime monitor "${PROBE_MONITOR_NAME}" ${existing ? "updated" : "created"} (id ${saved.id}): POST ${probeUrl} every ${interval} s, failing on anything but a 2xx`);
}

/** The cron monitor of the spool's heartbeat, by its slug, on the Cron Trigger's schedule; its check-ins upsert the same settings. */
async function upsertHeartbeatMonitor(sentry: SentryApi, { org, project, cron }: { org: string; project: string; cron: string }): Promise<void> {
  const { schedule, checkinMargin, maxRuntime, timezone, failureIssueThreshold, recoveryThreshold } = spoolMonitorConfig(cron);
  const monitor = {
    project,
    name: "Tunnel spool heartbeat",
    config: {
      schedule_type: schedule.type,
      schedule: schedule.value,
      checkin_margin: checkinMargin,
      max_runtime: maxRuntime,
      timezone,
      failure_issue_threshold: failureIssueThreshold,
      recovery_threshold: recoveryThreshold,
    },
  };
  const found = await sentry<unknown>("GET", `/organizations/${org}/monitors/${SPOOL_MONITOR_SLUG}/`, undefined, [404]);
  if (found === undefined) await sentry("POST", `/organizations/${org}/monitors/`, { ...monitor, slug: SPOOL_MONITOR_SLUG });
  else await sentry("PUT", `/organizations/${org}/monitors/${SPOOL_MONITOR_SLUG}/`, monitor);
  console.log(`Cron monitor ${SPOOL_MONITOR_SLUG} ${found === undefined ? "created" : "updated"}: the spool's heartbeat, "${cron}" UTC, an issue on one error or missed check-in`);
}

/** A call to Sentry's API; `undefined` for a status in `absent`, a refusal for any other failure. */
function sentryApi(base: string, token: string) {
  // Whatever the far end says is printed without the token or a terminal's control characters.
  const safe = (text: string) => printableLine(text, [token]);
  return async <T>(method: string, path: string, body?: unknown, absent: number[] = []): Promise<T> => {
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${base}/api/0${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000),
      });
      if (absent.includes(response.status)) {
        await response.body?.cancel();
        return undefined as T;
      }
      text = await boundedText(response);
    } catch (error) {
      throw new Refusal(`Sentry's API at ${base} could not be read: ${safe((error as Error).message)}`, 1);
    }
    const said = safe(text);
    if (!response.ok) throw new Refusal(`Sentry's API answered ${method} ${path} with ${response.status}: ${said}`, 1);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Refusal(`Sentry's API answered ${method} ${path} with ${response.status} but no JSON: ${said}`, 1);
    }
  };
}

/** The size Sentry counts for an uptime check's request: its line, each header, and the body. */
function checkRequestBytes(method: string, url: string, headers: [string, string][], body: string): number {
  const bytes = (text: string) => Buffer.byteLength(text, "utf8");
  return bytes(`${method} ${url} HTTP/1.1\r\n`) + headers.reduce((sum, [name, value]) => sum + bytes(name) + bytes(value) + 2, 0) + bytes(body) + 2;
}

/** Sends the probe's request once, as the uptime monitor will, and says what came back. */
async function tryProbe(url: URL, body: string): Promise<void> {
  const response = await fetch(url, { method: "POST", headers: Object.fromEntries(PROBE_HEADERS), body }).catch((error: Error) => {
    throw new Refusal(`${url.origin} could not be reached: ${error.message}`, 1);
  });
  const said = printableLine(await boundedText(response).catch((error: Error) => error.message), [], 200);
  console.log(`POST ${url.href}: ${response.status} ${said}`);
  if (!response.ok) throw new Refusal(`The probe would fail: the uptime monitor takes only a 2xx`, 1);
}
