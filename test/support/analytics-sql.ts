import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DatabaseSync } from "node:sqlite";

import type { CapturedDataPoint } from "../worker/fixtures/analytics-capture";

/** Analytics Engine's columns: twenty blobs and doubles, one index, the time and the sampling weight. */
const BLOBS = Array.from({ length: 20 }, (_, index) => `blob${index + 1}`);
const DOUBLES = Array.from({ length: 20 }, (_, index) => `double${index + 1}`);
const SECONDS = { MINUTE: 60, HOUR: 3600, DAY: 86_400 } as const;

/** A DateTime as Analytics Engine's JSON gives it: `2026-11-28 10:05:00`, UTC. */
const dateTime = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", " ");

/**
 * A loopback stand-in of Cloudflare's Analytics Engine SQL API (`POST
 * /client/v4/accounts/{account_id}/analytics_engine/sql`, the query as the body, a bearer token),
 * answering from data points a test captured. It runs the query itself, in SQLite, after spelling
 * the few ClickHouse forms the project's queries use as SQLite takes them (`INTERVAL 'n' UNIT`,
 * `NOW()`, `toStartOfInterval`, `quantileExactWeighted`, `argMax`); a query using anything else fails here
 * as it would not on Cloudflare, which keeps the project's queries to that small common part. Its
 * answer is the documented JSON (`meta`, `data`, `rows`), 64-bit integers quoted as ClickHouse
 * quotes them.
 */
export class AnalyticsSqlStandIn {
  readonly accountId: string;
  readonly token: string;
  private readonly database = new DatabaseSync(":memory:");
  private readonly server: Server;

  private constructor(accountId: string, token: string, dataset: string) {
    this.accountId = accountId;
    this.token = token;
    this.database.exec(
      `CREATE TABLE ${dataset} (dataset TEXT, timestamp REAL, _sample_interval INTEGER, index1 TEXT, ${BLOBS.map((blob) => `${blob} TEXT DEFAULT ''`).join(", ")}, ${DOUBLES.map((double) => `${double} REAL DEFAULT 0`).join(", ")})`,
    );
    this.database.function("toStartOfInterval", (timestamp, seconds) => dateTime(Math.floor(Number(timestamp) / Number(seconds)) * Number(seconds)));
    this.database.function("now_seconds", () => Date.now() / 1000);
    this.database.aggregate("quantileExactWeighted", {
      start: () => JSON.stringify({ level: 0, values: [] as [number, number][] }),
      step: (state, level, value, weight) => {
        const parsed = JSON.parse(String(state)) as { level: number; values: [number, number][] };
        parsed.level = Number(level);
        parsed.values.push([Number(value), Number(weight)]);
        return JSON.stringify(parsed);
      },
      result: (state) => {
        const { level, values } = JSON.parse(String(state)) as { level: number; values: [number, number][] };
        values.sort(([a], [b]) => a - b);
        const total = values.reduce((sum, [, weight]) => sum + weight, 0);
        let seen = 0;
        for (const [value, weight] of values) {
          seen += weight;
          if (seen >= level * total) return value;
        }
        return null;
      },
    });
    this.database.aggregate("argMax", {
      start: () => null,
      step: (best, value, by) => (best === null || Number(by) > Number(JSON.parse(String(best))[1]) ? JSON.stringify([value, by]) : best),
      result: (best) => (best === null ? null : (JSON.parse(String(best)) as [number, number])[0]),
    });
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const answer = this.answer(request.method ?? "", request.url ?? "", request.headers.authorization, Buffer.concat(chunks).toString("utf8"));
        response.writeHead(answer.status, { "content-type": "application/json" });
        response.end(JSON.stringify(answer.body));
      });
    });
  }

  static async start({ accountId = "0123456789abcdef0123456789abcdef", token = "test-token", dataset = "tunnel_envelopes" } = {}): Promise<AnalyticsSqlStandIn> {
    const standIn = new AnalyticsSqlStandIn(accountId, token, dataset);
    await new Promise<void>((resolve) => standIn.server.listen(0, "127.0.0.1", resolve));
    return standIn;
  }

  /** What `CLOUDFLARE_API_BASE_URL` is set to, as wrangler reads it. */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/client/v4`;
  }

  /** Adds the points as Analytics Engine would store them, each of weight 1 unless sampled. */
  insert(points: readonly CapturedDataPoint[], dataset = "tunnel_envelopes", sampleInterval = 1): void {
    const columns = ["dataset", "timestamp", "_sample_interval", "index1", ...BLOBS, ...DOUBLES];
    const insert = this.database.prepare(`INSERT INTO ${dataset} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`);
    for (const point of points) {
      const blobs = BLOBS.map((_, index) => String(point.blobs?.[index] ?? ""));
      const doubles = DOUBLES.map((_, index) => Number(point.doubles?.[index] ?? 0));
      insert.run(dataset, point.timestamp / 1000, sampleInterval, String(point.indexes?.[0] ?? ""), ...blobs, ...doubles);
    }
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.database.close();
  }

  private answer(method: string, url: string, authorization: string | undefined, query: string): { status: number; body: unknown } {
    if (method !== "POST" || url !== `/client/v4/accounts/${this.accountId}/analytics_engine/sql`) {
      return { status: 404, body: { success: false, errors: [{ code: 7003, message: "Could not route to the requested resource" }] } };
    }
    if (authorization !== `Bearer ${this.token}`) return { status: 401, body: { success: false, errors: [{ code: 10000, message: "Authentication error" }] } };
    try {
      const rows = this.database.prepare(asSqlite(query)).all() as Record<string, unknown>[];
      const names = rows[0] ? Object.keys(rows[0]) : [];
      const meta = names.map((name) => ({ name, type: columnType(rows.map((row) => row[name])) }));
      const data = rows.map((row) => Object.fromEntries(names.map((name, index) => [name, meta[index]!.type === "UInt64" ? String(row[name]) : row[name]])));
      return { status: 200, body: { meta, data, rows: data.length, rows_before_limit_at_least: data.length } };
    } catch (error) {
      return { status: 422, body: `Code: 62. DB::Exception: ${(error as Error).message}` };
    }
  }
}

/** The query as SQLite takes it; see {@link AnalyticsSqlStandIn}. */
function asSqlite(query: string): string {
  return query
    .replace(/\s+FORMAT\s+JSON\s*$/i, "")
    .replace(/INTERVAL\s+'?(\d+)'?\s+(MINUTE|HOUR|DAY)\b/gi, (_, count: string, unit: string) => String(Number(count) * SECONDS[unit.toUpperCase() as keyof typeof SECONDS]))
    .replace(/\bNOW\(\)/gi, "now_seconds()");
}

function columnType(values: readonly unknown[]): string {
  if (values.every((value) => typeof value === "string" && /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(value))) return "DateTime";
  if (values.every((value) => typeof value === "string")) return "String";
  if (values.every((value) => Number.isInteger(value) && Number(value) >= 0)) return "UInt64";
  return "Float64";
}
