import { writeFileSync } from "node:fs";

import { it } from "vitest";

import { root } from "../support/worker";
import {
  envelopeOf,
  inRotation,
  loadWithCpu,
  median,
  pairedRatio,
  MiB,
  postTimed,
  residentMegabytes,
  startControlWorker,
  startCoreTunnelWorker,
  startDrainingIngest,
  startExamplesShapeWorker,
  startTunnelWorker,
  type BenchWorker,
} from "./measure";
import { ensureWrk, requestsPerSecond } from "./wrk";

const ROUNDS = 5;
const SECONDS = 2;
const TUNNEL_QUERY = "?o=4501&p=4502&r=us";
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
 * median over rounds of its ratio to the control in the same round. Seven candidates, four sizes
 * and the 15 MiB latency, five rounds each: some seven minutes.
 */
it("measures the tunnel and its peers against a bare pass-through, without the asset router", async () => {
  ensureWrk();
  const ingest = await startDrainingIngest();
  const candidates: Candidate[] = [
    { name: "bare pass-through (the control)", worker: await startControlWorker(ingest.origin, "", false), path: "/" },
    { name: "bare pass-through behind the asset router", worker: await startControlWorker(ingest.origin, "", true), path: "/" },
    { name: "getsentry/examples' shape", worker: await startExamplesShapeWorker(ingest.origin), path: "/" },
    { name: "@sentry/core handleTunnelRequest", worker: await startCoreTunnelWorker(ingest.origin), path: "/" },
    { name: "ours, no rate-limit binding", worker: await startTunnelWorker(ingest.origin, { router: false }), path: `/monitoring${TUNNEL_QUERY}` },
    {
      name: "ours, with the rate-limit binding",
      worker: await startTunnelWorker(ingest.origin, { router: false, rateLimiter: "binding" }),
      path: `/monitoring${TUNNEL_QUERY}`,
    },
    {
      name: "ours, with a limiter counting in the isolate",
      worker: await startTunnelWorker(ingest.origin, { router: false, rateLimiter: "in-isolate" }),
      path: `/monitoring${TUNNEL_QUERY}`,
    },
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
          if (label === "10 KB") push(cpu, name, cpuMsPerRequest);
        }
      }
      for (const { name, worker, path } of order) {
        for (let sample = 0; sample < 3; sample += 1) push(latency, name, await postTimed(`${worker.origin}${path}`, huge));
      }
    }

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
      "CPU per 10 KB, ms": median(cpu.get(name)!).toFixed(3),
    }));
    console.table(rows);
    const budgets = [
      ["ours at 10 KB ≥ 0.90, and not below the examples' shape", ratio(candidates[4]!.name, "10 KB"), 0.9],
      ["ours at 1 MB ≥ 0.90", ratio(candidates[4]!.name, "1 MB"), 0.9],
      ["ours with the limiter at 10 KB ≥ 0.80, Miniflare's binding", ratio(candidates[5]!.name, "10 KB"), 0.8],
      ["ours with the limiter at 10 KB ≥ 0.80, counting in the isolate", ratio(candidates[6]!.name, "10 KB"), 0.8],
    ] as const;
    for (const [budget, value, min] of budgets) console.log(`${value >= min ? "met" : "MISSED"}: ${budget} (${value.toFixed(2)})`);
    console.log(`memory growth over 20 × 15 MiB: ours ${oursGrowth.toFixed(1)} MB, control ${controlGrowth.toFixed(1)} MB (budget ≤ 16 MB)`);
    const cpuOf = (candidate: Candidate) => median(cpu.get(candidate.name)!);
    const limiterPrice = {
      binding: cpuOf(candidates[5]!) - cpuOf(candidates[4]!),
      inIsolate: cpuOf(candidates[6]!) - cpuOf(candidates[4]!),
    };
    console.log(
      `the limiter's CPU per 10 KB envelope: ${limiterPrice.binding.toFixed(3)} ms through Miniflare's binding, ` +
        `${limiterPrice.inIsolate.toFixed(3)} ms counting in the isolate; the difference is the simulation's subrequest`,
    );
    writeFileSync(
      `${root}test/bench/last-peers-run.json`,
      `${JSON.stringify({ measuredAt: new Date().toISOString(), rows, memoryGrowthMB: { ours: oursGrowth, control: controlGrowth }, limiterCpuMs: limiterPrice }, null, 2)}\n`,
    );
  } finally {
    for (const { worker } of candidates) await worker.dispose();
    await ingest.stop();
  }
}, 720_000);
