import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

import { root } from "./workerd";

const run = promisify(execFile);

/** The tunnel package's README, as an adopter reads it. */
export const README = readFileSync(`${root}packages/tunnel/README.md`, "utf8");

/** The README's code block that follows `marker`, exactly as the page gives it. */
export function readmeBlock(marker: string, language: "ts" | "toml" | "jsonc" | "html" | "dotenv"): string {
  const from = README.indexOf(marker);
  const code = from === -1 ? undefined : new RegExp("```" + language + "\\n([\\s\\S]*?)```").exec(README.slice(from))?.[1];
  if (!code) throw new Error(`packages/tunnel/README.md has no ${language} block after "${marker}"`);
  return code;
}

/**
 * `npm pack` of the package, as it would be published: the one thing the adopters get of this
 * project. The tarball is the one file in a new folder; `--json` is not read, as npm 11 writes an
 * array there and npm 12 an object keyed by the package's name. Its `prepack` (a build, which
 * empties `dist/` first) is not run: `npm test` and the benchmarks build before, and tests that
 * run beside this one read `dist/` meanwhile.
 */
export async function packTheTunnel(into: string): Promise<string> {
  await run("npm", ["pack", "--ignore-scripts", "--pack-destination", into], { cwd: `${root}packages/tunnel` });
  const [tarball, ...others] = readdirSync(into).filter((name) => name.endsWith(".tgz"));
  if (!tarball || others.length > 0) throw new Error(`npm pack left ${[tarball, ...others].join(", ") || "no tarball"} in ${into}`);
  return join(into, tarball);
}

