import { afterAll, beforeAll } from "vitest";

import { FakeIngest } from "./fake-ingest";
import { APP_DSN, startWorker, type RunningWorker, type WorkerOptions } from "./worker";

type Vars = Record<string, string>;

/**
 * The Worker tests' fixture: a fake ingest, and the built Worker with the app's DSN sending to it,
 * started before the enclosing `describe`'s tests and stopped after them. Both are usable inside
 * its tests and hooks, as if they were plain variables. `vars` may be worked out from the ingest
 * (its origin, say); they replace the defaults.
 */
export function useIngestAndWorker(vars: Vars | ((ingest: FakeIngest) => Vars) = {}, options: WorkerOptions = {}): { ingest: FakeIngest; worker: RunningWorker } {
  let ingest: FakeIngest | undefined;
  let worker: RunningWorker | undefined;
  beforeAll(async () => {
    ingest = await FakeIngest.start();
    const extra = typeof vars === "function" ? vars(ingest) : vars;
    worker = await startWorker({ SENTRY_DSN: APP_DSN, TUNNEL_UPSTREAM_ORIGIN: ingest.origin, ...extra }, options);
  });
  afterAll(async () => {
    await worker?.dispose();
    await ingest?.stop();
  });
  return { ingest: startedLater(() => ingest, "the ingest"), worker: startedLater(() => worker, "the Worker") };
}

/** Stands for an object made in a `beforeAll`: every property is read from it when used. */
export function startedLater<T extends object>(current: () => T | undefined, name: string): T {
  return new Proxy({} as T, {
    get(_, key) {
      const target = current();
      if (!target) throw new Error(`${name} is used before the describe's beforeAll started it`);
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
