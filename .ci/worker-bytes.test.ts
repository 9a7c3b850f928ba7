import { beforeAll, describe, expect, it } from "vitest";

import { ADOPTER_WORKERS, gzipAdded } from "../test/support/adopter-workers";

/**
 * KiB of gzip each of the package README's Workers may add to an empty one, held as Sentry's own
 * SDK holds its bundles. A Worker that grows past its budget fails `npm test` until the budget is
 * raised here, in a commit that says why.
 */
const BUDGETS_KIB = { minimal: 17, full: 27 };

describe("the bytes an adopter's Worker carries, built from the packed tarball as the README writes it", { timeout: 180_000 }, () => {
  let added: Record<string, number>;
  beforeAll(async () => {
    added = await gzipAdded({ minimal: ADOPTER_WORKERS.minimal, full: ADOPTER_WORKERS.full });
  }, 180_000);

  it.each(Object.entries(BUDGETS_KIB))("the %s Worker adds at most %d KiB of gzip", (name, budget) => {
    expect(added[name]).toBeLessThanOrEqual(budget);
  });
});
