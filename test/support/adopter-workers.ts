import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

import { packTheTunnel, readmeBlock } from "./package-readme";
import { root } from "./workerd";

const run = promisify(execFile);
const env = { ...process.env, PATH: `${root}node_modules/.bin:${process.env.PATH ?? ""}`, WRANGLER_SEND_METRICS: "false" };

/** Every file an adopter writes, by its path in their project. */
export type AdopterFiles = Record<string, string>;

/** What the package README has an adopter write beside either Worker: the page's script and tag. */
const PAGE = { "page.ts": readmeBlock("**The page side.**", "ts"), [join("public", "index.html")]: readmeBlock("Each page loads it as a module", "html") };

/**
 * The README's minimal and full Workers, each with every file an adopter writes for it, and
 * Sentry's own tunnel (`@sentry/core` 11.12) as its documentation has one written into a Worker
 * that also serves an app: its path answered by `handleTunnelRequest`, the rest by the app, the
 * same page.
 */
export const ADOPTER_WORKERS: Record<"minimal" | "full" | "sentry-own", AdopterFiles> = {
  minimal: { "worker.ts": readmeBlock("## A minimal Worker", "ts"), "wrangler.toml": readmeBlock("## A minimal Worker", "toml"), ".dev.vars": readmeBlock("`.dev.vars`, for", "dotenv"), ...PAGE },
  full: { "worker.ts": readmeBlock("## The full Worker", "ts"), "wrangler.toml": readmeBlock("## The full Worker", "toml"), ".dev.vars": readmeBlock("`.dev.vars`, for", "dotenv"), ...PAGE },
  "sentry-own": {
    "worker.ts": `import { getTunnelPath, handleTunnelRequest } from "@sentry/core";

export default {
  async fetch(request, env) {
    if (request.method === "POST" && new URL(request.url).pathname === getTunnelPath(env.SENTRY_DSN)) {
      return handleTunnelRequest(request, { allowedDsns: [env.SENTRY_DSN] });
    }
    return new Response("Your app answers here.");
  },
} satisfies ExportedHandler<Env>;
`,
    "wrangler.toml": `name = "my-app"
main = "worker.ts"
compatibility_date = "2026-11-02"

[assets]
directory = "public"

[vars]
SENTRY_DSN = "https://<key>@o<org>.ingest.<region>.sentry.io/<project>"
`,
    ...PAGE,
  },
};

/** An adopter's lines, every file alike: those that are neither blank nor only a comment (`//`, `#`, `<!--`). */
export function linesOf(files: AdopterFiles): number {
  return Object.values(files)
    .flatMap((text) => text.split("\n"))
    .filter((line) => !/^\s*($|\/\/|#|<!--)/.test(line)).length;
}

/**
 * The gzip each Worker adds to an upload, in KiB: `wrangler deploy --dry-run` of its `worker.ts`
 * and `wrangler.toml` in one project that installs the packed tarball, less an empty Worker's.
 */
export async function gzipAdded(workers: Record<string, AdopterFiles>): Promise<Record<string, number>> {
  const scratch = mkdtempSync(join(tmpdir(), "adopter-bytes-"));
  try {
    const tarball = await packTheTunnel(scratch);
    const dir = join(scratch, "adopter");
    mkdirSync(join(dir, "public"), { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "adopter", private: true, type: "module" }));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball, "@sentry/core@11.12.0"], { cwd: dir, env });
    const gzipOf = async (files: AdopterFiles) => {
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), text);
      }
      const { stdout } = await run("wrangler", ["deploy", "--dry-run", "--outdir", join(dir, "out")], { cwd: dir, env });
      const gzip = /Total Upload: [\d.]+ KiB \/ gzip: ([\d.]+) KiB/.exec(stdout)?.[1];
      if (!gzip) throw new Error(`wrangler deploy --dry-run said no size:\n${stdout}`);
      return Number(gzip);
    };
    const empty = await gzipOf({ "worker.ts": 'export default { fetch: () => new Response("") };\n', "wrangler.toml": 'name = "my-app"\nmain = "worker.ts"\ncompatibility_date = "2026-11-02"\n' });
    const added: Record<string, number> = {};
    for (const [name, files] of Object.entries(workers)) added[name] = (await gzipOf({ "worker.ts": files["worker.ts"]!, "wrangler.toml": files["wrangler.toml"]! })) - empty;
    return added;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
