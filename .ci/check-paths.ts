// Every repository path the docs and the code's comments name must exist: a file moved or renamed
// leaves no word behind that sends a reader to nothing. Decision records are dated, and keep theirs. `npm run typecheck` runs it; run alone, it
// lists each path named that is not there, with where it is named, and exits 1 if there is one.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

/** The project's own top-level folders: a word that starts with one of them names a path. */
const FOLDERS = ["app", "worker", "test", "scripts", "docs", ".ci", "public", "packages"];

/** Text that names paths: docs, code and the project's own configuration. */
const NAMING_FILES = /(\.md|\.tsx?|\.m?js|\.cjs|\.toml|\/run|\.example)$/;

/**
 * Dated documents, which keep the text of their day: a decision record names the paths it was
 * made about, and is superseded by a newer one rather than rewritten when they move.
 */
export const DATED = /^docs\/decisions\//;

interface Named {
  path: string;
  /** Where it is named: the file and line. */
  at: string;
}

/**
 * The repository paths a text names: words that start with a project folder (`packages/tunnel/src/index.ts`,
 * `docs/decisions/`), and the targets of a Markdown file's relative links, resolved from its folder.
 * Globs and placeholders name their fixed part (`app/**` names `app/`).
 */
export function namedPaths(text: string, file: string, folders: readonly string[] = FOLDERS): Named[] {
  const named: Named[] = [];
  const lines = text.split("\n");
  const word = new RegExp(`(?:^|[\\s\`'"(\\[])((?:${folders.map((folder) => folder.replace(".", "\\.")).join("|")})/[\\w./*$<>…-]*)`, "g");
  for (const [index, line] of lines.entries()) {
    const at = `${file}:${index + 1}`;
    for (const match of line.matchAll(word)) named.push({ path: fixedPart(match[1]!), at });
    if (!file.endsWith(".md")) continue;
    for (const match of line.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
      const target = match[1]!;
      if (/^[a-z]+:/i.test(target) || target.startsWith("/")) continue;
      named.push({ path: normalize(join(dirname(file), target)), at });
    }
  }
  return named;
}

/** The path up to its first glob or placeholder, less a trailing dot, comma or colon of the sentence. */
function fixedPart(path: string): string {
  const cut = path.search(/[*$<…]/);
  const fixed = cut === -1 ? path : path.slice(0, path.lastIndexOf("/", cut) + 1);
  return fixed.replace(/[.,:;]+$/, "");
}

/**
 * The paths named somewhere in the checkout that are not in it. What git ignores is made later (a
 * build, a test run, a benchmark, a developer's settings), so it is not missing.
 */
export function missingPaths(root: string, files: readonly string[], folders: readonly string[] = FOLDERS): Named[] {
  const absent = files.flatMap((file) => namedPaths(readFileSync(join(root, file), "utf8"), file, folders)).filter(({ path }) => !existsSync(join(root, path)));
  if (absent.length === 0) return [];
  const ignored = new Set(ignoredByGit(root, [...new Set(absent.map(({ path }) => path))]));
  return absent.filter(({ path }) => !ignored.has(path));
}

function ignoredByGit(root: string, paths: readonly string[]): string[] {
  try {
    return execFileSync("git", ["check-ignore", "--no-index", "--stdin"], { cwd: root, input: paths.join("\n"), encoding: "utf8" }).split("\n");
  } catch {
    // Exit 1: none of them is ignored.
    return [];
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const tracked = execFileSync("git", ["ls-files"], { cwd: root, encoding: "utf8" }).split("\n");
  const missing = missingPaths(root, tracked.filter((file) => NAMING_FILES.test(file) && !DATED.test(file) && existsSync(join(root, file))));
  for (const { path, at } of missing) console.error(`${at}: names ${path}, which is not in the repository`);
  if (missing.length > 0) process.exit(1);
  console.log("paths: every repository path named in the docs and the code exists");
}
