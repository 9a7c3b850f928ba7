import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";

import { fetchOnce } from "../support/http";
import { readmeBlock } from "../support/package-readme";
import { APP_DSN } from "../support/worker";
import { bundleFixture, root, startFixture, startWorkerd, wranglerCompatibility, type Workerd } from "../support/workerd";
import { onTheWorkersCore } from "./cores";
import { runLoad, type Load } from "./wrk";

export const MiB = 1024 * 1024;

/** What a figure is held to, if anything: a ratio or value at least `min`, or at most `max`. */
export interface Budget {
  min?: number;
  max?: number;
}

/**
 * Said before every table of budgets: they are reported, never enforced. A benchmark on a shared
 * 2-core machine measures; a run that misses a budget still exits 0, and the miss is for a reader.
 */
export const BUDGETS_ONLY_REPORT = "Budgets are reported, not enforced: a missed one is marked MISSED, and the run still passes.";

/** A figure against its budget, in the tables' words. */
export function budgetVerdict(value: number, budget: Budget | undefined): string {
  if (!budget) return "reported";
  const met = (budget.min === undefined || value >= budget.min) && (budget.max === undefined || value <= budget.max);
  return `${met ? "met" : "MISSED"} (${budget.min !== undefined ? `≥ ${budget.min}` : `≤ ${budget.max}`})`;
}

const SENTRY_ANSWER = '{"id":"0123456789abcdef0123456789abcdef"}';

/**
 * A loopback ingest that reads every body to its end and answers as Sentry does, or, `down`, as
 * Sentry in an outage does (503); it keeps nothing.
 */
export async function startDrainingIngest(down = false): Promise<{ origin: string; stop: () => Promise<void> }> {
  const server = createServer((request, response) => {
    request.on("data", () => {});
    request.on("end", () => {
      if (down) {
        response.writeHead(503, { "content-type": "text/plain" });
        response.end("down");
        return;
      }
      // As Sentry answers an envelope: its event id, with its length (Node would send it chunked).
      response.writeHead(200, { "content-type": "application/json", "content-length": String(SENTRY_ANSWER.length) });
      response.end(SENTRY_ANSWER);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An envelope for the app's DSN whose one item pads it to `size` bytes. */
export function envelopeOf(size: number, type: "event" | "attachment"): Buffer {
  const head = Buffer.from(`${JSON.stringify({ dsn: APP_DSN, event_id: "feedfacefeedfacefeedfacefeedface" })}\n`);
  const itemHeader = (length: number) => Buffer.from(`${JSON.stringify({ type, length })}\n`);
  const payloadSize = size - head.length - itemHeader(size).length - 1;
  const payload =
    type === "event"
      ? Buffer.from(JSON.stringify({ message: "bench", extra: { padding: "x".repeat(Math.max(0, payloadSize - 45)) } }))
      : Buffer.alloc(payloadSize, 0xa5);
  return Buffer.concat([head, itemHeader(payload.length), payload, Buffer.from("\n")]);
}

/**
 * An envelope of `size` bytes and the connections to send it on: events up to the 64 KiB the tunnel
 * reads whole, attachments past that, on fewer connections since each holds a large body.
 */
export function envelopeLoad(size: number): { body: Buffer; connections: number } {
  const streamed = size > 64 * 1024;
  return { body: envelopeOf(size, streamed ? "attachment" : "event"), connections: streamed ? 4 : 16 };
}

/** The items in round `round`'s order: each takes every place in turn, so none is always first. */
export function inRotation<T>(items: readonly T[], round: number): T[] {
  return items.map((_, index) => items[(index + round) % items.length]!);
}

/**
 * The physical limit the tunnel is measured against: a Worker that hands the body to `fetch` and
 * nothing else, deployed like the app (the same static assets in front of it, so both pay the
 * same asset check). `/page` serves a fixed page, the control for server rendering.
 */
const CONTROL_WORKER = `
export default {
  fetch(request, env) {
    if (new URL(request.url).pathname === "/page") {
      return new Response(env.PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
    }
    return fetch(env.UPSTREAM, { method: "POST", body: request.body, headers: { "content-type": "application/x-sentry-envelope" } });
  },
};
`;

/**
 * The getsentry/examples tunnel's shape: the whole body as text, the first line parsed, the DSN's
 * host and project checked against an allow-list, the text posted on.
 */
const EXAMPLES_SHAPE_WORKER = `
export default {
  async fetch(request, env) {
    const envelope = await request.text();
    const header = JSON.parse(envelope.split("\\n")[0]);
    const dsn = new URL(header.dsn);
    const projectId = dsn.pathname.replace("/", "");
    if (dsn.hostname !== env.SENTRY_HOST || !env.PROJECT_IDS.split(",").includes(projectId)) {
      return new Response("not allowed", { status: 403 });
    }
    await fetch(env.UPSTREAM_ORIGIN + "/api/" + projectId + "/envelope/", { method: "POST", body: envelope });
    return Response.json({}, { status: 200 });
  },
};
`;

/** A Worker under measurement: where it listens, and its workerd process, for its CPU and memory. */
export type BenchWorker = Pick<Workerd, "origin" | "pid" | "dispose">;

/**
 * The tunnel's log lines are read and dropped: echoing thousands of them through this process
 * would slow the loopback ingest it also hosts, and so the figures.
 */
const DROP_OUTPUT = { output: "drop" } as const;
const KEEP_OUTPUT = { output: "keep" } as const;

/** The asset router Miniflare puts in front of a Worker with `[assets]`, as `wrangler.toml` deploys the app. */
const ASSET_ROUTER = { assets: { directory: `${root}public`, routerConfig: { has_user_worker: true } } };

export interface TunnelWorkerOptions {
  /** Bind the spool's queue and bucket, with a stored envelope retried only after an hour. */
  spool?: boolean;
  /** Put the asset router in front, as deployed (default); without it, the Worker's own cost shows. */
  router?: boolean;
  /**
   * Bind a rate limiter with a limit no bench reaches: Miniflare's simulation of the binding, or a
   * stand-in counting in the isolate.
   */
  rateLimiter?: "binding" | "in-isolate";
  /** Another build of the Worker than `build/index.js` (`npm run bench:builds`). */
  build?: string;
  /** Keep what the Worker logs, for {@link logLinesPerEnvelope} to count. Not for timing: the lines pass through here. */
  record?: boolean;
  /** Variables besides the bench's own. */
  variables?: Record<string, string>;
}

/** The limiter that counts in the isolate, planted in front of the build. */
const IN_ISOLATE_LIMITER = "test/bench/fixtures/in-isolate-limiter.ts";

/** The app's build, as `wrangler.toml` deploys it but for the bindings chosen. */
export async function startTunnelWorker(
  ingestOrigin: string,
  { spool = false, router = true, rateLimiter, build = `${root}build/index.js`, record = false, variables = {} }: TunnelWorkerOptions = {},
): Promise<Workerd> {
  const spoolBindings = {
    queueProducers: { TUNNEL_SPOOL: { queueName: "tunnel-spool" } },
    queueConsumers: { "tunnel-spool": { maxBatchSize: 10, maxBatchTimeout: 1 } },
    r2Buckets: { TUNNEL_SPOOL_BUCKET: "tunnel-spool" },
  };
  const limiter = { ratelimits: { TUNNEL_RATE_LIMITER: { namespace_id: "1001", simple: { limit: 1_000_000_000, period: 10 as const } } } };
  const script =
    rateLimiter === "in-isolate"
      ? await bundleFixture(IN_ISOLATE_LIMITER, `import { plant } from "./${IN_ISOLATE_LIMITER}";\nplant();\nexport { default } from "./${relative(root, build)}";\n`)
      : build;
  return onTheWorkersCore(
    startWorkerd(
      {
        workers: [
          {
            name: "tunnel",
            rootPath: root,
            modules: [{ type: "ESModule", path: script }],
            ...wranglerCompatibility(),
            bindings: {
              SENTRY_DSN: APP_DSN,
              SENTRY_ENVIRONMENT: "bench",
              TUNNEL_UPSTREAM_ORIGIN: ingestOrigin,
              TUNNEL_SPOOL_RETRY_SECONDS: "3600",
              // Without a limiter bound, said on purpose, as the Worker requires.
              ...(rateLimiter ? {} : { TUNNEL_RATE_LIMITING: "off" }),
              ...variables,
            },
            // As `wrangler.toml` binds it: an envelope's data point is its record (decision 024).
            analyticsEngineDatasets: { TUNNEL_ANALYTICS: { dataset: "tunnel_envelopes" } },
            ...(spool ? spoolBindings : {}),
            ...(rateLimiter ? limiter : {}),
            ...(router ? ASSET_ROUTER : {}),
          },
        ],
      },
      record ? KEEP_OUTPUT : DROP_OUTPUT,
    ),
  );
}

export async function startControlWorker(ingestOrigin: string, page: string, router = true): Promise<BenchWorker> {
  return onTheWorkersCore(
    startWorkerd(
      {
        modules: true,
        script: CONTROL_WORKER,
        ...wranglerCompatibility(),
        ...(router ? ASSET_ROUTER : {}),
        bindings: { UPSTREAM: `${ingestOrigin}/api/4502/envelope/`, PAGE: page },
      },
      DROP_OUTPUT,
    ),
  );
}

/** The getsentry/examples tunnel's shape as Miniflare runs it, without the asset router. */
export function examplesShapeOptions(ingestOrigin: string) {
  return {
    modules: true,
    script: EXAMPLES_SHAPE_WORKER,
    ...wranglerCompatibility(),
    bindings: { UPSTREAM_ORIGIN: ingestOrigin, SENTRY_HOST: "o4501.ingest.us.sentry.io", PROJECT_IDS: "4502" },
  };
}

/** The getsentry/examples tunnel's shape, without the asset router; `record` keeps what it logs. */
export async function startExamplesShapeWorker(ingestOrigin: string, record = false): Promise<Workerd> {
  return onTheWorkersCore(startWorkerd(examplesShapeOptions(ingestOrigin), record ? KEEP_OUTPUT : DROP_OUTPUT));
}

/** `@sentry/core`'s `handleTunnelRequest`, bundled into a Worker, without the asset router; `record` keeps what it logs. */
/**
 * The package README's minimal Worker as an adopter copies it, bundled with the package's `dist/`,
 * sending to the loopback ingest through its own `TUNNEL_UPSTREAM_ORIGIN`; its limiter a binding
 * that always admits (`test/bench/fixtures/admitting-limiter.ts`).
 */
export async function startReadmeMinimalWorker(ingestOrigin: string): Promise<Workerd> {
  mkdirSync(`${root}.cache`, { recursive: true });
  writeFileSync(`${root}.cache/readme-minimal-worker.ts`, readmeBlock("## A minimal Worker", "ts"));
  const script = await bundleFixture(
    "readme-minimal.ts",
    'import { plant } from "./test/bench/fixtures/admitting-limiter.ts";\nplant();\nexport { default } from "./.cache/readme-minimal-worker.ts";\n',
  );
  const limiter = { TUNNEL_RATE_LIMITER: { namespace_id: "1001", simple: { limit: 60, period: 10 as const } } };
  return onTheWorkersCore(
    startWorkerd({ modules: [{ type: "ESModule", path: script }], ...wranglerCompatibility(), bindings: { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingestOrigin }, ratelimits: limiter }, DROP_OUTPUT),
  );
}

export function startCoreTunnelWorker(ingestOrigin: string, record = false): Promise<Workerd> {
  return onTheWorkersCore(startFixture("test/bench/fixtures/core-tunnel.ts", { bindings: { DSN: APP_DSN, UPSTREAM_ORIGIN: ingestOrigin } }, record ? KEEP_OUTPUT : DROP_OUTPUT));
}

/** The lines a Worker started with `record` logs per envelope, each a Workers Logs event, and their own bytes per envelope. */
export async function logLinesPerEnvelope(worker: Workerd, url: string, body: Buffer, envelopes = 100): Promise<{ lines: number; bytes: number }> {
  worker.logs.length = 0;
  for (let sent = 0; sent < envelopes; sent += 1) await postTimed(url, body);
  // Lines reach this process a moment after the answers: counted once they stop coming.
  const written = () => worker.logs.filter((line) => line.trim() !== "");
  const deadline = Date.now() + 5_000;
  let seen = -1;
  while (written().length !== seen && Date.now() < deadline) {
    seen = written().length;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const bytes = written().reduce((sum, line) => sum + Buffer.byteLength(line, "utf8"), 0);
  return { lines: written().length / envelopes, bytes: bytes / envelopes };
}

/** The tunnel's stages with one left out (`test/bench/fixtures/ablation.ts`), without the asset router. */
export function startAblatedTunnelWorker(ingestOrigin: string, without: string): Promise<BenchWorker> {
  return onTheWorkersCore(startFixture("test/bench/fixtures/ablation.ts", { bindings: { SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingestOrigin, WITHOUT: without } }, DROP_OUTPUT));
}

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time the process has used so far, user and system, in milliseconds. */
export function cpuMilliseconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of /proc/<pid>/stat (utime, stime), counted after the ")" of the name.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}

export function residentMegabytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** Milliseconds from the first byte sent to the last byte of the answer. */
export async function postTimed(url: string, body: Buffer): Promise<number> {
  const started = performance.now();
  const response = await fetchOnce(new URL(url), {
    method: "POST",
    body: new Uint8Array(body),
    headers: { "content-type": "text/plain;charset=UTF-8" },
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`POST ${url} answered ${response.status}`);
  return performance.now() - started;
}

/** A wrk load against one Worker: its rate of 2xx answers, and workerd's CPU per request meanwhile. */
export async function loadWithCpu(worker: BenchWorker, load: Load): Promise<{ perSecond: number; cpuMsPerRequest: number }> {
  const before = cpuMilliseconds(worker.pid);
  const { requests, perSecond } = await runLoad(load);
  return { perSecond, cpuMsPerRequest: (cpuMilliseconds(worker.pid) - before) / requests };
}

/** A Worker under one of the loads of {@link cpuUnderOneLoad}, and the URL it is loaded at. */
export interface LoadedWorker {
  name: string;
  worker: BenchWorker;
  url: string;
}

/**
 * Each Worker's CPU per request, measured with every Worker under load at once, round after round:
 * one wrk per Worker, all started together, so that whatever else the host runs meanwhile slows
 * them all alike. Measured one after the other, two copies of one build came out 10 % apart on
 * this machine (`npm run bench:builds`, 15 rounds); loaded together, within 1 to 3 % (NOTES §18).
 * Throughput means nothing here (the Workers share their core); CPU per request is the figure.
 */
export async function cpuUnderOneLoad(
  workers: readonly LoadedWorker[],
  { body, connections, seconds = 3, rounds }: { body: Buffer; connections: number; seconds?: number; rounds: number },
): Promise<Map<string, number[]>> {
  const cpu = new Map<string, number[]>(workers.map(({ name }) => [name, []]));
  // Each Worker's share of the connections, so that the machine is as loaded as with one Worker.
  const each = Math.max(2, Math.floor(connections / workers.length));
  for (let round = 0; round < rounds; round += 1) {
    const before = workers.map(({ worker }) => cpuMilliseconds(worker.pid));
    // Generous: a request waits behind the other Workers' too.
    const loads = await Promise.all(workers.map(({ url }) => runLoad({ url, body, connections: each, seconds, timeoutSeconds: 10 })));
    workers.forEach(({ name, worker }, index) => cpu.get(name)!.push((cpuMilliseconds(worker.pid) - before[index]!) / loads[index]!.requests));
  }
  return cpu;
}

/**
 * The median of each round's ratio of `values` to `controls`, measured in the same round: the
 * machine's speed drifts between rounds by more than the differences measured.
 */
export function pairedRatio(values: readonly number[], controls: readonly number[]): number {
  return median(values.map((value, round) => value / controls[round]!));
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

interface Metafile {
  outputs: Record<string, { bytes: number; inputs: Record<string, { bytesInOutput: number }> }>;
}

/** The scripts a page loads (module preloads and the entry's import), gzip-compressed, and Sentry's share. */
export function clientJavaScript(html: string): {
  gzipBytes: number;
  sentryGzipBytes: number;
  files: string[];
  /** Each script's gzip size, and Sentry's part of it, in bytes. */
  chunks: { file: string; gzipBytes: number; sentryGzipBytes: number }[];
} {
  const files = [...new Set([...html.matchAll(/(?:href="|import\(")(\/build\/[^"]+\.js)/g)].map((match) => match[1]!))];
  const metafile = JSON.parse(readFileSync(`${root}build/metafile.js.json`, "utf8")) as Metafile;
  const chunks = files.map((file) => {
    const gz = gzipSync(readFileSync(`${root}public${file}`)).length;
    const inputs = Object.entries(metafile.outputs[`public${file}`]?.inputs ?? {});
    const total = inputs.reduce((sum, [, input]) => sum + input.bytesInOutput, 0);
    const sentry = inputs.filter(([path]) => path.includes("node_modules/@sentry")).reduce((sum, [, input]) => sum + input.bytesInOutput, 0);
    return { file, gzipBytes: gz, sentryGzipBytes: total > 0 ? Math.round((gz * sentry) / total) : 0 };
  });
  const sum = (key: "gzipBytes" | "sentryGzipBytes") => chunks.reduce((total, chunk) => total + chunk[key], 0);
  return { gzipBytes: sum("gzipBytes"), sentryGzipBytes: sum("sentryGzipBytes"), files, chunks };
}

export function workerBundleGzipBytes(): number {
  return gzipSync(readFileSync(`${root}build/index.js`)).length;
}
