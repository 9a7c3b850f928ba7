// npm run lists [-- --port 8799] [-- --rule '<filter>'] [-- <list file> …]: serves filter lists on
// loopback for the Worker's list watch under `npm start`: uBlock Origin's default lists as Debian
// ships them, or the files given, and with --rule one more list holding that rule (to see a block).
// README, "Ad-blockers", says what to set and how to run the check.
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";

import { BUNDLED_LISTS } from "./filter-lists.ts";
import { startListServer } from "./list-server.ts";

const { values, positionals } = parseArgs({ options: { port: { type: "string", default: "8799" }, rule: { type: "string", multiple: true } }, allowPositionals: true, strict: true });
const files = positionals.length > 0 ? positionals : BUNDLED_LISTS;
const missing = files.filter((file) => !existsSync(file));
if (missing.length > 0) {
  console.error(`No list file at ${missing.join(", ")}.`);
  if (positionals.length === 0) console.error("Install uBlock Origin's lists (sudo apt-get install webext-ublock-origin-chromium), or name list files.");
  process.exit(2);
}
const lists = Object.fromEntries(files.map((file) => [basename(file), readFileSync(file, "utf8")]));
if (values.rule) lists["local-rules.txt"] = `! Title: Rules given to npm run lists\n${values.rule.join("\n")}\n`;
const port = Number(values.port);
if (!/^\d+$/.test(values.port) || port < 1 || port > 65535) {
  console.error(`--port must be a port number, got "${values.port}"`);
  process.exit(2);
}
const server = await startListServer(lists, port).catch((error: NodeJS.ErrnoException) => {
  console.error(error.code === "EADDRINUSE" ? `Port ${port} is taken: give another with --port.` : error.message);
  process.exit(2);
});
console.log(`Serving ${server.urls.length} lists. Put these in .dev.vars, then start the app (npm start):\n`);
console.log(`TUNNEL_WATCH=on\nTUNNEL_WATCH_HOST=localhost\nTUNNEL_WATCH_LISTS=${server.urls.join(",")}\n`);
console.log(`Run the check: curl "http://localhost:8787/cdn-cgi/local/scheduled?cron=17+*/6+*+*+*"`);
