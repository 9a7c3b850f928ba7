import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the stand-in answered. */
export interface ApiCall {
  method: string;
  path: string;
  body: Record<string, unknown> | undefined;
  status: number;
}

/** An uptime monitor as the stand-in keeps it: the fields a client sent, and Sentry's own. */
export type UptimeMonitor = Record<string, unknown> & { id: string; projectSlug: string; name: string };
export type CronMonitor = Record<string, unknown> & { slug: string };

/** The fields Sentry's API documents for an uptime monitor (`UptimeMonitorValidator`), and the intervals it takes. */
const UPTIME_FIELDS = new Set(["name", "status", "owner", "environment", "url", "interval_seconds", "timeout_ms", "mode", "method", "headers", "trace_sampling", "body"]);
const UPTIME_REQUIRED = ["name", "url", "interval_seconds", "timeout_ms"];
const UPTIME_INTERVALS = new Set([60, 300, 600, 1200, 1800, 3600]);
const METHODS = new Set(["GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"]);
/** A cron monitor's (`MonitorValidator`, `ConfigValidator`). */
const MONITOR_FIELDS = new Set(["project", "name", "slug", "status", "owner", "is_muted", "config", "alert_rule"]);
const CONFIG_FIELDS = new Set(["schedule_type", "schedule", "checkin_margin", "max_runtime", "timezone", "failure_issue_threshold", "recovery_threshold"]);

/** What Sentry's validators would refuse of an uptime monitor; `partial` for an update. */
function uptimeProblems(body: Record<string, unknown>, partial: boolean): string[] {
  const problems = Object.keys(body).filter((field) => !UPTIME_FIELDS.has(field)).map((field) => `unknown field ${field}`);
  if (!partial) problems.push(...UPTIME_REQUIRED.filter((field) => body[field] === undefined).map((field) => `${field} is required`));
  if (body.interval_seconds !== undefined && !UPTIME_INTERVALS.has(body.interval_seconds as number)) problems.push("interval_seconds is not a valid choice");
  const timeout = body.timeout_ms as number | undefined;
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout >= 1000 && timeout <= 60_000)) problems.push("timeout_ms must be 1000 to 60000");
  if (body.method !== undefined && !METHODS.has(body.method as string)) problems.push("method is not a valid choice");
  const headers = body.headers;
  if (headers !== undefined && !(Array.isArray(headers) && headers.every((pair) => Array.isArray(pair) && pair.length === 2 && pair.every((part) => typeof part === "string")))) {
    problems.push("Expected array of header tuples.");
  }
  if (typeof body.url === "string" && (!URL.canParse(body.url) || body.url.length > 255)) problems.push("url is not a valid URL of at most 255 characters");
  return problems;
}

function monitorProblems(body: Record<string, unknown>, partial: boolean): string[] {
  const problems = Object.keys(body).filter((field) => !MONITOR_FIELDS.has(field)).map((field) => `unknown field ${field}`);
  if (!partial) problems.push(...["project", "name", "config"].filter((field) => body[field] === undefined).map((field) => `${field} is required`));
  const config = body.config as Record<string, unknown> | undefined;
  if (config) {
    problems.push(...Object.keys(config).filter((field) => !CONFIG_FIELDS.has(field)).map((field) => `unknown config field ${field}`));
    if (!["crontab", "interval"].includes(config.schedule_type as string)) problems.push("schedule_type must be crontab or interval");
    if (config.schedule_type === "crontab" && !(typeof config.schedule === "string" && config.schedule.trim().split(/\s+/).length === 5)) problems.push("Only 5 field crontab syntax is supported");
  }
  return problems;
}

/**
 * A loopback stand-in of the parts of Sentry's API that `npm run monitors` uses, for one
 * organisation: uptime monitors (list, create, update) and cron monitors (retrieve, create,
 * update). It checks the bearer token, and each body against the fields Sentry's validators
 * document, answering 400 with the problems as Sentry does.
 */
export class SentryApiStandIn {
  readonly calls: ApiCall[] = [];
  readonly uptime: UptimeMonitor[] = [];
  readonly monitors: CronMonitor[] = [];
  readonly org: string;
  readonly token: string;
  private readonly server: Server;

  private constructor(org: string, token: string) {
    this.org = org;
    this.token = token;
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
        const method = request.method ?? "";
        const path = request.url ?? "";
        const answer = request.headers.authorization === `Bearer ${this.token}` ? this.answer(method, path, body) : { status: 401, body: { detail: "Invalid token" } };
        this.calls.push({ method, path, body, status: answer.status });
        response.writeHead(answer.status, { "content-type": "application/json" });
        response.end(JSON.stringify(answer.body));
      });
    });
  }

  static async start(org = "acme", token = "sntrys_test"): Promise<SentryApiStandIn> {
    const standIn = new SentryApiStandIn(org, token);
    await new Promise<void>((resolve) => standIn.server.listen(0, "127.0.0.1", resolve));
    return standIn;
  }

  /** What `SENTRY_URL` is set to, as sentry-cli reads it. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private answer(method: string, path: string, body: Record<string, unknown> | undefined): { status: number; body: unknown } {
    const org = this.org;
    const url = new URL(path, "http://sentry");
    let match: RegExpExecArray | null;
    if (method === "GET" && url.pathname === `/api/0/organizations/${org}/uptime/`) {
      // As Sentry's search reads it: a word with a colon is a filter, and one it does not know matches nothing.
      const words = (url.searchParams.get("query") ?? "").split(/\s+/).filter(Boolean);
      if (words.some((word) => word.includes(":"))) return { status: 200, body: [] };
      const text = words.join(" ").toLowerCase();
      return { status: 200, body: this.uptime.filter((monitor) => monitor.name.toLowerCase().includes(text) || String(monitor.url).toLowerCase().includes(text)) };
    }
    if ((match = new RegExp(`^/api/0/projects/${org}/([^/]+)/uptime/(?:(\\d+)/)?$`).exec(url.pathname))) {
      const [, project, id] = match;
      const problems = uptimeProblems(body ?? {}, id !== undefined);
      if (problems.length) return { status: 400, body: { detail: problems } };
      if (method === "POST" && id === undefined) {
        const created = { ...body, id: String(this.uptime.length + 1), projectSlug: project! } as UptimeMonitor;
        this.uptime.push(created);
        return { status: 201, body: created };
      }
      const existing = this.uptime.find((monitor) => monitor.id === id && monitor.projectSlug === project);
      if (method === "PUT" && existing) return { status: 200, body: Object.assign(existing, body) };
      return { status: 404, body: { detail: "The requested resource does not exist" } };
    }
    if (method === "POST" && url.pathname === `/api/0/organizations/${org}/monitors/`) {
      const problems = monitorProblems(body ?? {}, false);
      if (this.monitors.some((monitor) => monitor.slug === body?.slug)) problems.push(`The slug "${String(body?.slug)}" is already in use.`);
      if (problems.length) return { status: 400, body: { detail: problems } };
      const created = { ...body } as CronMonitor;
      this.monitors.push(created);
      return { status: 201, body: created };
    }
    if ((match = new RegExp(`^/api/0/organizations/${org}/monitors/([^/]+)/$`).exec(url.pathname))) {
      const existing = this.monitors.find((monitor) => monitor.slug === match![1]);
      if (!existing) return { status: 404, body: { detail: "The requested resource does not exist" } };
      if (method === "GET") return { status: 200, body: existing };
      if (method !== "PUT") return { status: 405, body: {} };
      const problems = monitorProblems(body ?? {}, true);
      if (problems.length) return { status: 400, body: { detail: problems } };
      return { status: 200, body: Object.assign(existing, body) };
    }
    return { status: 404, body: { detail: "The requested resource does not exist" } };
  }
}
