import { execFileSync } from "node:child_process";
import { cpus } from "node:os";

/**
 * Which cores the benchmarks run what on. Every Worker's workerd gets the first core; this process,
 * with the loopback ingest it hosts and every wrk it starts, gets the others. A Worker under load
 * then spends a core on its own requests, as an isolate does in production, where the client and
 * Sentry are other machines. Sharing both cores with wrk and the ingest instead, one build's
 * throughput moved by a fifth between runs and the examples' shape came out faster than the bare
 * pass-through (NOTES §19, §20; decision 027). With one core there is nothing to split, and nothing
 * is pinned.
 *
 * `os.cpus()`, not `availableParallelism()`: the latter counts only the cores this process may use,
 * which after {@link keepToTheWorldsCores} is one. It takes the machine's CPUs to be 0 to n − 1, all
 * usable; where they are not, `taskset` fails and so does the benchmark, rather than measuring
 * something else than it says.
 */
const CORES = cpus().length;
const WORKER_CORES = CORES > 1 ? "0" : undefined;
const WORLD_CORES = CORES > 2 ? `1-${CORES - 1}` : CORES === 2 ? "1" : undefined;

function pin(pid: number, cpuList: string | undefined): void {
  // Every thread of the process, not only its first.
  if (cpuList !== undefined) execFileSync("taskset", ["--all-tasks", "--cpu-list", "--pid", cpuList, String(pid)], { stdio: ["ignore", "ignore", "pipe"] });
}

/** Moves a Worker's workerd, just started, onto the Workers' core; a Worker that cannot be moved is stopped. */
export async function onTheWorkersCore<T extends { pid: number; dispose(): Promise<void> }>(starting: Promise<T>): Promise<T> {
  const worker = await starting;
  try {
    pin(worker.pid, WORKER_CORES);
  } catch (error) {
    await worker.dispose();
    throw error;
  }
  return worker;
}

/** Keeps this process, and what it starts from now on, off the Workers' core. */
export function keepToTheWorldsCores(): void {
  pin(process.pid, WORLD_CORES);
}

/** Said before a benchmark's tables. */
export const CORES_USED =
  WORKER_CORES === undefined
    ? "One core: the Workers share it with wrk and the loopback ingest."
    : `Cores: the Workers on CPU ${WORKER_CORES}; wrk and the loopback ingest on the rest (${WORLD_CORES}).`;
