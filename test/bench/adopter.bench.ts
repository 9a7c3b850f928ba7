import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { it } from "vitest";

import { packTheTunnel, readmeBlock } from "../support/package-readme";
import { root } from "../support/workerd";

const run = promisify(execFile);
const env = { ...process.env, PATH: `${root}node_modules/.bin:${process.env.PATH ?? ""}`, WRANGLER_SEND_METRICS: "false" };

/** Sentry's own tunnel as its documentation has an adopter write it (`@sentry/core` 11.12). */
const SENTRY_OWN = {
  worker: `import { handleTunnelRequest } from "@sentry/core";

export default {
  fetch(request, env) {
    return handleTunnelRequest(request, { allowedDsns: [env.SENTRY_DSN] });
  },
} satisfies ExportedHandler<Env>;
`,
  toml: `name = "my-app"
main = "worker.ts"
compatibility_date = "2026-11-02"

[vars]
SENTRY_DSN = "https://<key>@o<org>.ingest.<region>.sentry.io/<project>"
`,
};

/** A Worker with nothing in it: what every Worker's upload holds, taken from each figure. */
const EMPTY = { worker: 'export default { fetch: () => new Response("") };\n', toml: 'name = "my-app"\nmain = "worker.ts"\ncompatibility_date = "2026-11-02"\n' };

/** The gzip `wrangler deploy --dry-run` reports for a project holding `worker` and `toml`, in KiB. */
async function gzipOf(dir: string, { worker, toml }: { worker: string; toml: string }): Promise<number> {
  writeFileSync(join(dir, "worker.ts"), worker);
  writeFileSync(join(dir, "wrangler.toml"), toml);
  const { stdout } = await run("wrangler", ["deploy", "--dry-run", "--outdir", join(dir, "out")], { cwd: dir, env });
  const gzip = /Total Upload: [\d.]+ KiB \/ gzip: ([\d.]+) KiB/.exec(stdout)?.[1];
  if (!gzip) throw new Error(`wrangler deploy --dry-run said no size:\n${stdout}`);
  return Number(gzip);
}

const linesOf = (text: string) => text.trimEnd().split("\n").length;

/**
 * `npm run bench:adopter`: what adopting the tunnel costs, as the package README's minimal and full
 * Workers are written, beside Sentry's own `handleTunnelRequest` Worker, all built in one run from
 * the packed tarball: the lines of `worker.ts` and `wrangler.toml`, and the gzip
 * `wrangler deploy --dry-run` reports, less an empty Worker's.
 */
it("prints each adopter's lines and the gzip the tunnel adds", { timeout: 300_000 }, async () => {
  const scratch = mkdtempSync(join(tmpdir(), "bench-adopter-"));
  try {
    const tarball = await packTheTunnel(scratch);
    const dir = join(scratch, "adopter");
    await run("mkdir", [dir]);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "adopter", private: true, type: "module" }));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball, "@sentry/core@11.12.0"], { cwd: dir, env });
    const empty = await gzipOf(dir, EMPTY);
    const workers = {
      minimal: { worker: readmeBlock("## A minimal Worker", "ts"), toml: readmeBlock("## A minimal Worker", "toml") },
      full: { worker: readmeBlock("## The full Worker", "ts"), toml: readmeBlock("## The full Worker", "toml") },
      "sentry-own": SENTRY_OWN,
    };
    for (const [name, files] of Object.entries(workers)) {
      const added = (await gzipOf(dir, files)) - empty;
      console.log(`adopter ${name}: ${linesOf(files.worker) + linesOf(files.toml)} lines, ${added.toFixed(1)} KiB gzip added`);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
