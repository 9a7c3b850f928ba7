#!/usr/bin/env node
// `npx tunnel-spool-create`: once per Cloudflare account, before the first deploy, creates what the
// README's wrangler.toml binds for the spool: both queues, keeping a message at most a day, the
// bucket, and the bucket's lifecycle rule that deletes anything the spool left behind after two
// days. It runs the project's own wrangler, logged in. What exists already is left as it is.
import { spawnSync } from "node:child_process";

const steps = [
  ["queues", "create", "tunnel-spool", "--message-retention-period-secs", "86400"],
  ["queues", "create", "tunnel-spool-dead", "--message-retention-period-secs", "86400"],
  ["r2", "bucket", "create", "tunnel-spool"],
  ["r2", "bucket", "lifecycle", "add", "tunnel-spool", "spool-backstop", "spool/", "--expire-days", "2", "--force"],
];

for (const args of steps) {
  const result = spawnSync("wrangler", args, { encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", FORCE_COLOR: "0" } });
  // Without the terminal's colour codes, which wrangler writes whatever it is told.
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.replace(/\u001b\[[0-9;]*m/g, "");
  if (result.status === 0) {
    console.log(`done: wrangler ${args.join(" ")}`);
  } else if (/already exists|already taken|duplicate/i.test(output)) {
    console.log(`exists: wrangler ${args.join(" ")}`);
  } else {
    const reason = output.split("\n").find((line) => line.includes("[ERROR]"))?.replace(/^.*?\[ERROR\]\s*/, "") ?? `exit ${result.status}`;
    console.error(`failed: wrangler ${args.join(" ")}: ${reason}`);
    process.exit(1);
  }
}
