// No file in app/ or the tunnel's package over 250 lines and no function over 60 (issue 19): past those, a module or a
// function holds more than one idea. Tests are exempt (`*.test.ts`, and `*.workerd.ts`, the cases
// a test runs in workerd); a test reads top to bottom.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

import ts from "typescript";

const MAX_FILE_LINES = 250;
const MAX_FUNCTION_LINES = 60;

const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !/\.(test|workerd)\.tsx?$/.test(name) && !name.endsWith(".generated.ts") ? [path] : [];
  });

const oversized: string[] = [];
for (const path of ["app", "packages/tunnel/src"].flatMap(sources)) {
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n").length;
  if (lines > MAX_FILE_LINES) oversized.push(`${path}: ${lines} lines (at most ${MAX_FILE_LINES})`);
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const lineOf = (position: number) => file.getLineAndCharacterOfPosition(position).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const length = lineOf(node.end) - lineOf(node.getStart()) + 1;
      const name = node.name?.getText() ?? "a function";
      if (length > MAX_FUNCTION_LINES) oversized.push(`${path}:${lineOf(node.getStart())}: ${name} is ${length} lines (at most ${MAX_FUNCTION_LINES})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}
for (const line of oversized) console.error(line);
if (oversized.length > 0) process.exit(1);
console.log(`sizes: every file in app/ and packages/ within ${MAX_FILE_LINES} lines, every function within ${MAX_FUNCTION_LINES}`);
