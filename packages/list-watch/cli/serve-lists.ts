// npm run lists [-- --port 8799] [-- --rule '<filter>'] [-- <list file> …]: serves filter lists on
// loopback for the Worker's list watch under `npm start`: uBlock Origin's default lists as Debian
// ships them, or the files given, and with --rule one more list holding that rule (to see a block).
// The app's README, "Ad-blockers", says what to set and how to run the check.
import { parseArgs } from "node:util";

import { listFiles, listTexts } from "./filter-lists.ts";
import { startListServer } from "./list-server.ts";

const { values, positionals } = parseArgs({ options: { port: { type: "string", default: "8799" }, rule: { type: "string", multiple: true } }, allowPositionals: true, strict: true });
const files = listFiles(positionals);
if (typeof files === "string") {
  console.error(files);
  process.exit(2);
}
const lists = listTexts(files);
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
