// The package's JavaScript (package.json's `build`, decision 042): each entry bundled by esbuild,
// the code two entries share in chunks, minified. Every Worker that installs the package uploads
// what it imports of it, so local names are short and comments are gone; the names an adopter
// imports stay as they are, and the source maps carry the TypeScript, so that a stack trace mapped
// through them reads as the source. The declarations, with their doc comments, are `tsc`'s.
import { readFileSync } from "node:fs";

import { buildSync } from "esbuild";

// The entries are those package.json publishes (`exports` and `bin`), each built from its source.
const { exports, bin } = JSON.parse(readFileSync("package.json", "utf8")) as { exports: Record<string, string | { default: string }>; bin: Record<string, string> };
const published = [...Object.values(exports).flatMap((entry) => (typeof entry === "string" ? [] : [entry.default])), ...Object.values(bin)];

buildSync({
  entryPoints: published.map((path) => path.replace(/^\.\/dist\/(.+)\.js$/, "src/$1.ts")),
  outdir: "dist",
  outbase: "src",
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  format: "esm",
  platform: "neutral",
  target: "es2022",
  external: ["@sentry/core", "hono", "node:*"],
  minify: true,
  sourcemap: true,
  logLevel: "warning",
});
