#!/usr/bin/env node
// `npx tunnel-spool-create`: once per Cloudflare account, before the first deploy, creates what the
// README's wrangler.toml binds for the spool: both queues, keeping a message at most a day, the
// bucket, and the bucket's lifecycle rule that deletes anything the spool left behind after two
// days. It runs the project's own wrangler, logged in. What exists already is left as it is.
// `--queue`, `--dead-letter-queue` and `--bucket` name another spool (a staging Worker's beside
// production's in one account); give the Worker the same names (`TUNNEL_SPOOL_QUEUE_NAME`,
// `TUNNEL_DEAD_LETTER_QUEUE_NAME`, or `createTunnel`'s `spool.queueName` and `deadLetterQueueName`).
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";

const USAGE = [
  "Usage: npx tunnel-spool-create [--queue NAME] [--dead-letter-queue NAME] [--bucket NAME]",
  "Creates the spool's two queues (a day's retention), its R2 bucket and the bucket's two-day lifecycle rule,",
  "with the project's wrangler, logged in. What exists is left as it is.",
  "Defaults: --queue tunnel-spool, --dead-letter-queue tunnel-spool-dead, --bucket tunnel-spool.",
].join("\n");

const parsed = argumentsOrExit();
if (parsed.values.help) {
  console.log(USAGE);
  process.exit(0);
}
const { queue, "dead-letter-queue": deadLetterQueue, bucket } = parsed.values;
const names: Record<string, string> = { queue, "dead-letter-queue": deadLetterQueue, bucket };

/** The command's arguments; an unknown or incomplete flag is said in words, never as a stack trace, and exits 2. */
function argumentsOrExit() {
  try {
    return parseArgs({
      options: {
        queue: { type: "string", default: "tunnel-spool" },
        "dead-letter-queue": { type: "string", default: "tunnel-spool-dead" },
        bucket: { type: "string", default: "tunnel-spool" },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
    });
  } catch (error) {
    console.error(`${(error as Error).message.split("\n")[0]}\n${USAGE}`);
    return process.exit(2);
  }
}

/** Cloudflare's rule for a queue's and a bucket's name: lowercase letters, digits and dashes. */
const NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
for (const [option, name] of Object.entries(names)) {
  if (!NAME.test(name)) {
    console.error(`--${option} must be lowercase letters, digits and dashes, got "${name}"`);
    process.exit(2);
  }
}

const steps = [
  ["queues", "create", queue, "--message-retention-period-secs", "86400"],
  ["queues", "create", deadLetterQueue, "--message-retention-period-secs", "86400"],
  ["r2", "bucket", "create", bucket],
  ["r2", "bucket", "lifecycle", "add", bucket, "spool-backstop", "spool/", "--expire-days", "2", "--force"],
];

for (const args of steps) {
  const result = spawnSync("wrangler", args, { encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", FORCE_COLOR: "0" } });
  // Without the terminal's colour codes, which wrangler writes whatever it is told.
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.replace(/\u001b\[[0-9;]*m/g, "");
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT") {
    console.error("failed: wrangler was not found: install it (npm install --save-dev wrangler) and run this with npx, which finds it in node_modules");
    process.exit(1);
  }
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
