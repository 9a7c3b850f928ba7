import { existsSync, readdirSync } from "node:fs";

import { it } from "vitest";

import { APP_ROUTE } from "../support/worker";
import { root } from "../support/workerd";
import { CORES_USED } from "./cores";
import {
  cpuUnderOneLoad,
  envelopeLoad,
  inRotation,
  loadWithCpu,
  median,
  pairedRatio,
  startControlWorker,
  startDrainingIngest,
  startExamplesShapeWorker,
  startTunnelWorker,
  type BenchWorker,
} from "./measure";
import { ensureWrk, runLoad } from "./wrk";

const BUILDS = `${root}.bench-builds`;
const SIZE = Number(process.env.BENCH_SIZE ?? 10 * 1024);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SECONDS = 2;
const EXAMPLES = "getsentry/examples' shape (a reference)";

/**
 * `npm run bench:builds`: two or more builds of the Worker side by side in one run, each against a
 * bare pass-through in the same round: an A/B of a change, which two separate runs on this
 * machine cannot resolve. Put each build's `index.js` in `.bench-builds/<name>/`, for example
 * `npm run build && mkdir -p .bench-builds/after && cp build/index.js .bench-builds/after/`.
 * `BENCH_SIZE` (bytes, 10 KB by default) and `BENCH_ROUNDS` (7) choose the load.
 *
 * Two measures: throughput, each Worker loaded in turn; and CPU per envelope with every Worker
 * loaded at once, the getsentry/examples shape among them as the budget's reference. The second
 * is the one that resolves a change of a few per cent on this shared machine (NOTES §18). Both
 * with the Workers on a core of their own (`cores.ts`).
 */
it("compares builds of the Worker against a bare pass-through, round by round", async () => {
  if (!existsSync(BUILDS)) throw new Error(`no builds to compare: put each in ${BUILDS}/<name>/index.js`);
  ensureWrk();
  const ingest = await startDrainingIngest();
  const candidates: { name: string; worker: BenchWorker; path: string }[] = [
    { name: "bare pass-through (the control)", worker: await startControlWorker(ingest.origin, "", false), path: "/" },
  ];
  const examples = { name: EXAMPLES, worker: await startExamplesShapeWorker(ingest.origin), path: "/" };
  try {
    for (const name of readdirSync(BUILDS).sort()) {
      const worker = await startTunnelWorker(ingest.origin, { router: false, build: `${BUILDS}/${name}/index.js` });
      candidates.push({ name, worker, path: APP_ROUTE });
    }
    const { body, connections } = envelopeLoad(SIZE);
    for (const { worker, path } of [...candidates, examples]) await runLoad({ url: `${worker.origin}${path}`, body, connections, seconds: 1 });

    const rates = new Map<string, number[]>();
    const cpu = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const { name, worker, path } of inRotation(candidates, round)) {
        const { perSecond, cpuMsPerRequest } = await loadWithCpu(worker, { url: `${worker.origin}${path}`, body, connections, seconds: SECONDS });
        rates.set(name, [...(rates.get(name) ?? []), perSecond]);
        cpu.set(name, [...(cpu.get(name) ?? []), cpuMsPerRequest]);
      }
    }

    const paired = (name: string, against: string) => pairedRatio(rates.get(name)!, rates.get(against)!);
    const first = candidates[1]?.name;
    console.log(CORES_USED);
    console.log("Each Worker loaded in turn:");
    console.table(
      candidates.map(({ name }) => ({
        Build: name,
        "req/s against the control": paired(name, candidates[0]!.name).toFixed(3),
        [`req/s against ${first}`]: first ? paired(name, first).toFixed(3) : "",
        "CPU per envelope, ms": median(cpu.get(name)!).toFixed(3),
        "CPU per round, ms": cpu.get(name)!.map((value) => value.toFixed(2)).join(" "),
      })),
    );

    const together = [...candidates, examples].map(({ name, worker, path }) => ({ name, worker, url: `${worker.origin}${path}` }));
    const shared = await cpuUnderOneLoad(together, { body, connections, rounds: ROUNDS });
    const against = (name: string, reference: string) => pairedRatio(shared.get(name)!, shared.get(reference)!);
    console.log("Every Worker loaded at once: CPU per envelope, each round's ratio paired:");
    console.table(
      together.map(({ name }) => ({
        Build: name,
        "CPU × the control": against(name, candidates[0]!.name).toFixed(3),
        [`CPU × ${first}`]: first ? against(name, first).toFixed(3) : "",
        "CPU × the examples' shape": against(name, EXAMPLES).toFixed(3),
        "CPU per round, ms": shared.get(name)!.map((value) => value.toFixed(2)).join(" "),
      })),
    );
  } finally {
    for (const { worker } of [...candidates, examples]) await worker.dispose();
    await ingest.stop();
  }
});
