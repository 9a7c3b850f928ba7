// What `npm run health` reads: the tunnel's Analytics Engine data points, through Cloudflare's SQL
// API, with the queries in docs/queries/ (the files docs/operating.md gives for the SQL API and
// Grafana), each weighted by `_sample_interval`.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { boundedText, printable, printableLine } from "./api-answer.ts";

const QUERIES = fileURLToPath(new URL("../docs/queries/", import.meta.url));

/** The last hour by the minute, or the last day by the quarter hour. */
export type HealthWindow = "hour" | "day";

export interface Credentials {
  accountId: string;
  token: string;
  /** `CLOUDFLARE_API_BASE_URL`, as wrangler reads it. */
  baseUrl: string;
}

export interface HealthReport {
  window: HealthWindow;
  /** Each bucket's length, in minutes. */
  bucketMinutes: number;
  envelopes: { minute: string; project: string; outcome: string; envelopes: number }[];
  refusals: { reason: string; requests: number }[];
  losses: { outcome: string; reason: string; envelopes: number }[];
  spool: { minute: string; backlog: number; backlog_last: number; oldest_age_s: number; delivered_in_batches: number }[];
  sentry: { minute: string; p50_ms: number; p95_ms: number; answered: number }[];
  statuses: { status: number; envelopes: number }[];
}

/** Why a query could not be answered; said in one line. */
export class HealthQueryError extends Error {}

/** The credentials from the environment, or the one line saying what to set and where to get it. */
export function credentialsFrom(env: Record<string, string | undefined>): Credentials | string {
  const accountId = env.CLOUDFLARE_ACCOUNT_ID?.trim();
  const token = env.CLOUDFLARE_API_TOKEN?.trim();
  if (accountId && token) return { accountId, token, baseUrl: (env.CLOUDFLARE_API_BASE_URL?.trim() || "https://api.cloudflare.com/client/v4").replace(/\/+$/, "") };
  const missing = [!accountId && "CLOUDFLARE_ACCOUNT_ID", !token && "CLOUDFLARE_API_TOKEN"].filter(Boolean).join(" and ");
  return (
    `npm run health needs ${missing}: the account ID is on the dashboard's Workers & Pages overview, and the token is one ` +
    "with Account > Account Analytics > Read, made at https://dash.cloudflare.com/profile/api-tokens"
  );
}

/** A query file as the docs show it, for the window asked: the day is read by quarter hours. */
export function queryText(name: string, window: HealthWindow): string {
  const text = readFileSync(`${QUERIES}${name}.sql`, "utf8");
  if (window === "hour") return text;
  return text.replaceAll("INTERVAL '1' HOUR", "INTERVAL '1' DAY").replaceAll("INTERVAL '1' MINUTE", "INTERVAL '15' MINUTE");
}

type Row = Record<string, unknown>;

async function runQuery({ accountId, token, baseUrl }: Credentials, query: string): Promise<Row[]> {
  const url = `${baseUrl}/accounts/${encodeURIComponent(accountId)}/analytics_engine/sql`;
  // Whatever the far end says is printed without the token or a terminal's control characters.
  const said = (text: string) => printableLine(text, [token]);
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: `${query.trim()}\nFORMAT JSON`, signal: AbortSignal.timeout(30_000) });
    text = await boundedText(response);
  } catch (error) {
    throw new HealthQueryError(`Cloudflare's SQL API at ${url} could not be read: ${said((error as Error).message)}`);
  }
  if (!response.ok) throw new HealthQueryError(`Cloudflare's SQL API answered ${response.status}: ${said(text)}`);
  let answer: { data?: Row[] } | undefined;
  try {
    answer = JSON.parse(text) as { data?: Row[] };
  } catch {
    // A proxy's page, say: said as what came, below.
  }
  if (!Array.isArray(answer?.data)) throw new HealthQueryError(`Cloudflare's SQL API answered without data: ${said(text)}`);
  const rows: unknown[] = answer.data;
  return rows.map((row) =>
    typeof row === "object" && row !== null ? Object.fromEntries(Object.entries(row).map(([name, value]) => [name, typeof value === "string" ? printable(value, [token]) : value])) : {},
  );
}

/** ClickHouse's JSON quotes 64-bit integers; every figure is read as a number. */
const numberOf = (value: unknown) => (value === null || value === undefined || value === "" ? 0 : Number(value));
const textOf = (value: unknown) => (value === null || value === undefined ? "" : String(value));

/** Runs every query for the window, one after the other (the SQL API limits concurrent queries). */
export async function readHealth(credentials: Credentials, window: HealthWindow): Promise<HealthReport> {
  const rows = async (name: string) => runQuery(credentials, queryText(name, window));
  const envelopes = (await rows("envelopes")).map((row) => ({ minute: textOf(row.minute), project: textOf(row.project), outcome: textOf(row.outcome), envelopes: numberOf(row.envelopes) }));
  const refusals = (await rows("refusals")).map((row) => ({ reason: textOf(row.reason), requests: numberOf(row.requests) }));
  const losses = (await rows("losses")).map((row) => ({ outcome: textOf(row.outcome), reason: textOf(row.reason), envelopes: numberOf(row.envelopes) }));
  const spool = (await rows("spool")).map((row) => ({
    minute: textOf(row.minute),
    backlog: numberOf(row.backlog),
    backlog_last: numberOf(row.backlog_last),
    oldest_age_s: numberOf(row.oldest_age_s),
    delivered_in_batches: numberOf(row.delivered_in_batches),
  }));
  const sentry = (await rows("sentry")).map((row) => ({ minute: textOf(row.minute), p50_ms: numberOf(row.p50_ms), p95_ms: numberOf(row.p95_ms), answered: numberOf(row.answered) }));
  const statuses = (await rows("sentry-statuses")).map((row) => ({ status: numberOf(row.status), envelopes: numberOf(row.envelopes) }));
  return { window, bucketMinutes: window === "hour" ? 1 : 15, envelopes, refusals, losses, spool, sentry, statuses };
}

/** Whether the window held no data point at all. */
export function isEmpty(report: HealthReport): boolean {
  return [report.envelopes, report.refusals, report.losses, report.spool, report.sentry, report.statuses].every((rows) => rows.length === 0);
}
