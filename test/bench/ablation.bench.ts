import { it } from "vitest";

import { APP_ROUTE } from "../support/worker";
import { CORES_USED } from "./cores";
import {
  envelopeLoad,
  inRotation,
  loadWithCpu,
  median,
  startAblatedTunnelWorker,
  startControlWorker,
  startDrainingIngest,
  startExamplesShapeWorker,
  startTunnelWorker,
  type BenchWorker,
} from "./measure";
import { ensureWrk, runLoad } from "./wrk";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = 2;
const SIZE = 10 * 1024;
/** What `test/bench/fixtures/ablation.ts` leaves out, one stage at a time. */
const WITHOUT = ["nothing", "admit", "header-read", "delivery-checks", "log-line"] as const;

/**
 * `npm run bench:ablation`: CPU per 10 KB envelope of the tunnel with each stage taken out in turn,
 * beside the pass-through, the examples' shape and the real build, in one run: where the tunnel's
 * CPU goes, stage by stage (test/bench/NOTES.md).
 */
it("measures the tunnel's CPU per envelope with each stage taken out in turn", async () => {
  ensureWrk();
  const ingest = await startDrainingIngest();
  const candidates: { name: string; worker: BenchWorker; path: string }[] = [
    { name: "bare pass-through", worker: await startControlWorker(ingest.origin, "", false), path: "/" },
    { name: "getsentry/examples' shape", worker: await startExamplesShapeWorker(ingest.origin), path: "/" },
    { name: "ours, the build", worker: await startTunnelWorker(ingest.origin, { router: false }), path: APP_ROUTE },
  ];
  for (const without of WITHOUT) candidates.push({ name: `ours, stages, without ${without}`, worker: await startAblatedTunnelWorker(ingest.origin, without), path: APP_ROUTE });
  try {
    const { body, connections } = envelopeLoad(SIZE);
    for (const { worker, path } of candidates) await runLoad({ url: `${worker.origin}${path}`, body, connections, seconds: 1 });
    const cpu = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const { name, worker, path } of inRotation(candidates, round)) {
        const { cpuMsPerRequest } = await loadWithCpu(worker, { url: `${worker.origin}${path}`, body, connections, seconds: SECONDS });
        cpu.set(name, [...(cpu.get(name) ?? []), cpuMsPerRequest]);
      }
    }
    const of = (name: string) => median(cpu.get(name)!);
    const full = of("ours, stages, without nothing");
    console.log(CORES_USED);
    console.table(
      candidates.map(({ name }) => ({
        Candidate: name,
        "CPU per envelope, ms": of(name).toFixed(3),
        "× pass-through": (of(name) / of("bare pass-through")).toFixed(2),
        "× examples' shape": (of(name) / of("getsentry/examples' shape")).toFixed(2),
        "the stage's share, ms": name.startsWith("ours, stages, without ") && !name.endsWith("nothing") ? (full - of(name)).toFixed(3) : "",
      })),
    );
  } finally {
    for (const { worker } of candidates) await worker.dispose();
    await ingest.stop();
  }
}, 600_000);
