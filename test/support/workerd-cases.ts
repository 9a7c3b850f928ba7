import { afterAll, beforeAll } from "vitest";

import { startFixture, type Workerd } from "./workerd";

/**
 * The Node side of a file of cases that run inside workerd (its Worker made by `serveCases`): the
 * file bundled and started once for the test file, and a way to run one case by name. `options`
 * are Miniflare's (bindings, queues, buckets).
 */
export function useWorkerdCases(fixture: string, options: Parameters<typeof startFixture>[1] = {}) {
  let worker: Workerd | undefined;
  beforeAll(async () => {
    worker = await startFixture(fixture, options);
  });
  afterAll(() => worker?.dispose());
  return {
    run: <T>(name: string): Promise<T> => worker!.call<T>(`/${name}`),
    worker: () => worker!,
  };
}
