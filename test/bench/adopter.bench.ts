import { it } from "vitest";

import { ADOPTER_WORKERS, gzipAdded, linesOf } from "../support/adopter-workers";

/**
 * `npm run bench:adopter`: what adopting the tunnel costs, as the package README's minimal and full
 * Workers are written, beside Sentry's own `handleTunnelRequest` in a Worker that also serves an
 * app, all built in one run from the packed tarball: every line an adopter writes (the Worker,
 * its configuration, `.dev.vars`, the page's script and tag; neither blank nor only a comment),
 * and the gzip `wrangler deploy --dry-run` reports, less an empty Worker's.
 */
it("prints each adopter's lines and the gzip the tunnel adds", { timeout: 300_000 }, async () => {
  const added = await gzipAdded(ADOPTER_WORKERS);
  for (const [name, files] of Object.entries(ADOPTER_WORKERS)) {
    console.log(`adopter ${name}: ${linesOf(files)} lines (${Object.keys(files).join(", ")}), ${added[name]!.toFixed(1)} KiB gzip added`);
  }
});
