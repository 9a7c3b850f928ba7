import { writeFileSync } from "node:fs";

import { it } from "vitest";

import { APP_ROUTE } from "../support/worker";
import { root, type Workerd } from "../support/workerd";
import { CORES_USED } from "./cores";
import {
  startReadmeMinimalWorker,
  cpuUnderOneLoad,
  envelopeOf,
  inRotation,
  loadWithCpu,
  median,
  pairedRatio,
  MiB,
  postTimed,
  logLinesPerEnvelope,
  residentMegabytes,
  startControlWorker,
  startCoreTunnelWorker,
  startDrainingIngest,
  startExamplesShapeWorker,
  startTunnelWorker,
  type BenchWorker,
  type Budget,
  budgetVerdict,
  BUDGETS_ONLY_REPORT,
} from "./measure";
import { envelopesIncluded, INVOCATION_LOG_BYTES, LINE_ATTRIBUTES_BYTES_ESTIMATE, LOGS_FROM_DECEMBER, NO_UNITS, spooledUnits, usdForMonth, usdPerMillion, type Units } from "./price";
import { ensureWrk, requestsPerSecond } from "./wrk";

const ROUNDS = 5;
const SECONDS = 2;
const SIZES = [
  ["1 KB", 1_024, "event", 16],
  ["10 KB", 10 * 1024, "event", 16],
  ["64 KB", 64 * 1024, "attachment", 8],
  ["1 MB", 1 * MiB, "attachment", 4],
] as const;

interface Candidate {
  name: string;
  worker: BenchWorker;
  path: string;
}

/**
 * `npm run bench:peers`: the tunnel's own cost, side by side with its peers, all in workerd and
 * none behind the asset router (which Cloudflare does not charge to the Worker), against a bare
 * pass-through Worker. Every candidate runs in each round, in a rotating order; each figure is the
 * median over rounds of its ratio to the control in the same round. Eight candidates (the package README's minimal Worker among them), four sizes
 * and the 15 MiB latency, five rounds each: some seven minutes.
 */
it("measures the tunnel and its peers against a bare pass-through, without the asset router", async () => {
  ensureWrk();
  const ingest = await startDrainingIngest();
  const candidates: Candidate[] = [
    { name: "bare pass-through (the control)", worker: await startControlWorker(ingest.origin, "", false), path: "/" },
    { name: "bare pass-through behind the asset router", worker: await startControlWorker(ingest.origin, "", true), path: "/" },
    { name: "getsentry/examples' shape", worker: await startExamplesShapeWorker(ingest.origin), path: "/" },
    { name: "@sentry/core 11.12 handleTunnelRequest", worker: await startCoreTunnelWorker(ingest.origin), path: "/" },
    { name: "ours, no rate-limit binding", worker: await startTunnelWorker(ingest.origin, { router: false }), path: APP_ROUTE },
    {
      name: "ours, with the rate-limit binding",
      worker: await startTunnelWorker(ingest.origin, { router: false, rateLimiter: "binding" }),
      path: APP_ROUTE,
    },
    {
      name: "ours, with a limiter counting in the isolate",
      worker: await startTunnelWorker(ingest.origin, { router: false, rateLimiter: "in-isolate" }),
      path: APP_ROUTE,
    },
    { name: "the package README's minimal Worker", worker: await startReadmeMinimalWorker(ingest.origin), path: APP_ROUTE },
  ];
  const huge = envelopeOf(15 * MiB, "attachment");
  const rates = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  const latency = new Map<string, number[]>();
  const push = (into: Map<string, number[]>, key: string, value: number) => into.set(key, [...(into.get(key) ?? []), value]);
  try {
    for (const { worker, path } of candidates) {
      await requestsPerSecond({ url: `${worker.origin}${path}`, body: envelopeOf(10 * 1024, "event"), connections: 8, seconds: 1 });
    }
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = inRotation(candidates, round);
      for (const [label, size, type, connections] of SIZES) {
        const body = envelopeOf(size, type);
        for (const { name, worker, path } of order) {
          const { perSecond, cpuMsPerRequest } = await loadWithCpu(worker, { url: `${worker.origin}${path}`, body, connections, seconds: SECONDS });
          push(rates, `${name}|${label}`, perSecond);
          push(cpu, `${name}|${label}`, cpuMsPerRequest);
        }
      }
      for (const { name, worker, path } of order) {
        for (let sample = 0; sample < 3; sample += 1) push(latency, name, await postTimed(`${worker.origin}${path}`, huge));
      }
    }

    // The 10 KB load again, every peer at once: the figure the CPU budgets are read from, since
    // loads taken in turn catch whatever else the host runs in some turns and not others.
    const [, tenKilobytes, tenKilobytesType, tenKilobytesConnections] = SIZES.find(([label]) => label === "10 KB")!;
    const peers = [candidates[0]!, candidates[2]!, candidates[3]!, candidates[4]!, candidates[7]!];
    const shared = await cpuUnderOneLoad(
      peers.map(({ name, worker, path }) => ({ name, worker, url: `${worker.origin}${path}` })),
      { body: envelopeOf(tenKilobytes, tenKilobytesType), connections: tenKilobytesConnections, rounds: ROUNDS },
    );

    // Memory after 20 × 15 MiB, for ours and the control.
    const growth = async ({ worker, path }: Candidate) => {
      const before = residentMegabytes(worker.pid);
      for (let sent = 0; sent < 20; sent += 1) await postTimed(`${worker.origin}${path}`, huge);
      return residentMegabytes(worker.pid) - before;
    };
    const oursGrowth = await growth(candidates[4]!);
    const controlGrowth = await growth(candidates[0]!);

    const control = candidates[0]!.name;
    const ratio = (name: string, label: string) => pairedRatio(rates.get(`${name}|${label}`)!, rates.get(`${control}|${label}`)!);
    const rows = candidates.map(({ name }) => ({
      Candidate: name,
      ...Object.fromEntries(SIZES.map(([label]) => [`${label} req/s ratio`, ratio(name, label).toFixed(2)])),
      "15 MiB latency ratio": pairedRatio(latency.get(name)!, latency.get(control)!).toFixed(2),
    }));
    console.log(CORES_USED);
    console.log("Throughput and latency, as ratios to the bare pass-through in the same round:");
    console.table(rows);

    // CPU per envelope: workerd's own CPU time, which is what Workers bill and what bounds an isolate.
    const cpuOf = (name: string, label: string) => median(cpu.get(`${name}|${label}`)!);
    const cpuSizes = SIZES.filter(([label]) => label !== "1 MB");
    const examples = candidates[2]!.name;
    const cpuRows = candidates.map(({ name }) => ({
      Candidate: name,
      ...Object.fromEntries(
        cpuSizes.flatMap(([label]) => [
          [`${label} ms`, cpuOf(name, label).toFixed(3)],
          [`${label} × pass-through`, (cpuOf(name, label) / cpuOf(control, label)).toFixed(2)],
        ]),
      ),
      "10 KB × examples' shape": (cpuOf(name, "10 KB") / cpuOf(examples, "10 KB")).toFixed(2),
    }));
    console.log("CPU per envelope, medians over rounds, with ratios in the same run:");
    console.table(cpuRows);
    const ours = candidates[4]!.name;
    const sharedRatio = (name: string, reference: string) => pairedRatio(shared.get(name)!, shared.get(reference)!);
    console.log("CPU per 10 KB envelope with every peer loaded at once (each round's ratios paired):");
    console.table(
      peers.map(({ name }) => ({
        Candidate: name,
        "ms": median(shared.get(name)!).toFixed(3),
        "× pass-through": sharedRatio(name, control).toFixed(2),
        "× examples' shape": sharedRatio(name, examples).toFixed(2),
      })),
    );
    const budgets: [string, number, Budget][] = [
      ["ours at 10 KB", ratio(ours, "10 KB"), { min: 0.9 }],
      ["ours at 10 KB against the examples' shape", ratio(ours, "10 KB") / ratio(examples, "10 KB"), { min: 1 }],
      ["ours at 1 MB", ratio(ours, "1 MB"), { min: 0.9 }],
      ["ours with the limiter at 10 KB, Miniflare's binding", ratio(candidates[5]!.name, "10 KB"), { min: 0.8 }],
      ["ours with the limiter at 10 KB, counting in the isolate", ratio(candidates[6]!.name, "10 KB"), { min: 0.8 }],
      ["ours' CPU at 10 KB × the examples' shape, all loaded at once", sharedRatio(ours, examples), { max: 1.15 }],
      ["ours' CPU at 10 KB × the pass-through, all loaded at once", sharedRatio(ours, control), { max: 1.3 }],
      ["ours' CPU at 10 KB × the examples' shape, loaded in turn", cpuOf(ours, "10 KB") / cpuOf(examples, "10 KB"), { max: 1.15 }],
      ["ours' memory growth over 20 × 15 MiB, MB", oursGrowth, { max: 16 }],
    ];
    // What an adopter gets, against what Sentry's own tunnel gives them.
    const minimal = candidates[7]!.name;
    const sentryOwn = candidates[3]!.name;
    budgets.push(
      ["the README's minimal Worker at 10 KB × Sentry's own", ratio(minimal, "10 KB") / ratio(sentryOwn, "10 KB"), { min: 1.2 }],
      ["the README's minimal Worker's CPU at 10 KB × Sentry's own, all loaded at once", sharedRatio(minimal, sentryOwn), { max: 0.85 }],
      ["the README's minimal Worker's CPU at 10 KB × Sentry's own, loaded in turn", cpuOf(minimal, "10 KB") / cpuOf(sentryOwn, "10 KB"), { max: 0.85 }],
    );
    console.log(BUDGETS_ONLY_REPORT);
    for (const [figure, value, budget] of budgets) console.log(`${budgetVerdict(value, budget)}: ${figure} (${value.toFixed(2)})`);
    console.log(`memory growth over 20 × 15 MiB: ours ${oursGrowth.toFixed(1)} MB, control ${controlGrowth.toFixed(1)} MB`);
    const limiterPrice = {
      binding: cpuOf(candidates[5]!.name, "10 KB") - cpuOf(ours, "10 KB"),
      inIsolate: cpuOf(candidates[6]!.name, "10 KB") - cpuOf(ours, "10 KB"),
    };
    console.log(
      `the limiter's CPU per 10 KB envelope: ${limiterPrice.binding.toFixed(3)} ms through Miniflare's binding, ` +
        `${limiterPrice.inIsolate.toFixed(3)} ms counting in the isolate; the difference is the simulation's subrequest`,
    );
    const priceRows = await pricePerMillion(ingest.origin, {
      control: cpuOf(control, "10 KB"),
      examples: cpuOf(examples, "10 KB"),
      core: cpuOf(candidates[3]!.name, "10 KB"),
      ours: cpuOf(ours, "10 KB"),
    });
    console.log(
      `What a million 10 KB envelopes cost past the Workers Paid plan's included amounts, Workers Logs per event until 2026-11-30 and per GB from ${LOGS_FROM_DECEMBER.date} ` +
        `(a line's own bytes measured, ${LINE_ATTRIBUTES_BYTES_ESTIMATE} B of Cloudflare's attributes estimated, an invocation log ${INVOCATION_LOG_BYTES} B as published; prices: docs/performance.md):`,
    );
    console.table(priceRows);
    const priceRatio = Number(priceRows.find((row) => row.Candidate.startsWith("ours, the README's record"))!["× examples' shape"]);
    console.log(`${budgetVerdict(priceRatio, { max: 1.1 })}: ours' price per million with the README's record × the examples' shape's (${priceRatio.toFixed(2)})`);
    writeFileSync(
      `${root}test/bench/last-peers-run.json`,
      `${JSON.stringify({ measuredAt: new Date().toISOString(), cores: CORES_USED, rows, cpuRows, cpuAllAtOnce: Object.fromEntries(shared), priceRows, memoryGrowthMB: { ours: oursGrowth, control: controlGrowth }, limiterCpuMs: limiterPrice }, null, 2)}\n`,
    );
  } finally {
    for (const { worker } of candidates) await worker.dispose();
    await ingest.stop();
  }
}, 720_000);

/**
 * One Analytics Engine data point per request to the tunnel, whatever its outcome: the rule the
 * package's "the tunnel: its record, priced" test holds (Miniflare's dataset cannot be counted).
 */
const DATA_POINTS_PER_ENVELOPE = 1;

/**
 * The price of a million 10 KB envelopes past the plan's included amounts, for each tunnel with the
 * record it keeps: its CPU as measured above; its log lines counted from a run of its own; its data
 * points; and the invocation log Workers Logs adds per request, which a Worker has as Cloudflare
 * creates it (observability on) and which the README's `wrangler.toml` turns off for ours.
 */
async function pricePerMillion(ingestOrigin: string, cpuMs: { control: number; examples: number; core: number; ours: number }) {
  const body = envelopeOf(10 * 1024, "event");
  const linesOf = async (start: () => Promise<Workerd>, path: string) => {
    const worker = await start();
    try {
      return await logLinesPerEnvelope(worker, `${worker.origin}${path}`, body);
    } finally {
      await worker.dispose();
    }
  };
  const examples = await linesOf(() => startExamplesShapeWorker(ingestOrigin, true), "/");
  const core = await linesOf(() => startCoreTunnelWorker(ingestOrigin, true), "/");
  const ours = await linesOf(() => startTunnelWorker(ingestOrigin, { router: false, record: true }), APP_ROUTE);
  const oursAll = await linesOf(() => startTunnelWorker(ingestOrigin, { router: false, record: true, variables: { TUNNEL_LOG_FORWARDED: "on" } }), APP_ROUTE);
  /** A line weighs its own bytes, measured, and the attributes Cloudflare adds, estimated; an invocation log the published average. */
  const units = (cpu: number, logged: { lines: number; bytes: number }, invocationLogs: number, dataPoints = 0): Units => ({
    ...NO_UNITS,
    requests: 1,
    cpuMs: cpu,
    logEvents: logged.lines + invocationLogs,
    logBytes: logged.bytes + logged.lines * LINE_ATTRIBUTES_BYTES_ESTIMATE + invocationLogs * INVOCATION_LOG_BYTES,
    dataPoints,
  });
  const oursUnits = units(cpuMs.ours, ours, 0, DATA_POINTS_PER_ENVELOPE);
  // A spooled envelope's two lines (spooled, then delivered), as long as the live path's line.
  const spooledLines = { lines: 2, bytes: 2 * (oursAll.bytes / Math.max(oursAll.lines, 1)) };
  const candidates: [string, Units][] = [
    ["bare pass-through, invocation logs on", units(cpuMs.control, { lines: 0, bytes: 0 }, 1)],
    ["getsentry/examples' shape, invocation logs on (Cloudflare's default)", units(cpuMs.examples, examples, 1)],
    ["@sentry/core 11.12 handleTunnelRequest, invocation logs on", units(cpuMs.core, core, 1)],
    ["ours, the README's record: invocation logs off, TUNNEL_LOG_FORWARDED off", oursUnits],
    ["ours, TUNNEL_LOG_FORWARDED=on", units(cpuMs.ours, oursAll, 0, DATA_POINTS_PER_ENVELOPE)],
    ["ours, invocation logs on too", units(cpuMs.ours, ours, 1, DATA_POINTS_PER_ENVELOPE)],
    // Stored while Sentry is down, delivered on the first retry: the spool's queue operations, its
    // two lines and the consumer's data point; the consumer's own CPU is left out, and its
    // invocations are a tenth of a request each (batches of ten).
    ["ours, an envelope spooled and delivered later", { ...units(cpuMs.ours, spooledLines, 0, DATA_POINTS_PER_ENVELOPE + 1), ...spooledUnits(body.length), requests: 1.1 }],
  ];
  const examplesPrice = usdPerMillion(candidates[1]![1]);
  return candidates.map(([name, perEnvelope]) => ({
    Candidate: name,
    "CPU ms": perEnvelope.cpuMs.toFixed(3),
    "log events": perEnvelope.logEvents.toFixed(2),
    "log KB": (perEnvelope.logBytes / 1000).toFixed(2),
    "data points": perEnvelope.dataPoints.toFixed(2),
    "queue ops": perEnvelope.queueOperations.toFixed(0),
    "USD per million, to 2026-11-30": usdPerMillion(perEnvelope).toFixed(3),
    [`USD per million, from ${LOGS_FROM_DECEMBER.date}`]: usdPerMillion(perEnvelope, "per-gb").toFixed(3),
    "× examples' shape": (usdPerMillion(perEnvelope) / examplesPrice).toFixed(2),
    "envelopes a month the plan includes, to / from": `${(envelopesIncluded(perEnvelope) / 1_000_000).toFixed(1)} M / ${(envelopesIncluded(perEnvelope, "per-gb") / 1_000_000).toFixed(1)} M`,
    "USD for 100 M a month, to / from": `${usdForMonth(perEnvelope, 100_000_000).toFixed(2)} / ${usdForMonth(perEnvelope, 100_000_000, "per-gb").toFixed(2)}`,
  }));
}
