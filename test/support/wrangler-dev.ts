import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { eventually } from "@edge-monitoring/tunnel/testing";

import { freePort } from "./http";
import { root } from "./workerd";

export interface DevServer {
  origin: string;
  /** Where its local queues, buckets and limiters keep their state. */
  stateDir: string;
  /** Everything wrangler and the Worker printed. */
  output: () => string;
  stop(): Promise<void>;
}

/** Where a redeploy runs: the origin's port and the state of the deployment before it. */
interface Redeploy {
  port: number;
  stateDir: string;
}

interface Where {
  /** Another project's folder, with its own `wrangler.toml` (an adopter's Worker); by default this one's. */
  project?: string;
  redeploy?: Redeploy;
}

/**
 * `wrangler dev` serving the built app on a free loopback port, as a developer runs it; or, given
 * the server it replaces, at that origin with that state, as a redeploy would. Its own process
 * group, so that stopping it also stops the workerd it started.
 *
 * Each server keeps its local state (queues, R2, the limiters' SQLite files) in a folder of its
 * own. By default wrangler keeps it in the project's `.wrangler/state`, which two servers started
 * at once then share: under load, one of them failed to start with SQLITE_BUSY on its files.
 */
export async function startWranglerDev(vars: Record<string, string> = {}, where: Where = {}): Promise<DevServer> {
  // A port that was free when asked can be taken before workerd binds it (under load, by another
  // process's outgoing connection): wrangler then exits with "Address already in use", and is
  // started again on other ports, a bounded number of times. A redeploy keeps its port.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startOnce(vars, where);
    } catch (error) {
      if (!(error instanceof PortTaken) || where.redeploy || attempt === PORT_ATTEMPTS) throw error;
    }
  }
}

const PORT_ATTEMPTS = 3;

class PortTaken extends Error {}

async function startOnce(vars: Record<string, string>, { project = root, redeploy }: Where): Promise<DevServer> {
  const port = redeploy?.port ?? (await freePort());
  const stateDir = redeploy?.stateDir ?? mkdtempSync(join(tmpdir(), "wrangler-state-"));
  const args = ["dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(await freePort()), "--persist-to", stateDir];
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  // This project's wrangler, wherever it runs: `npx` in another project would fetch its own.
  const child = spawn(`${root}node_modules/.bin/wrangler`, args, {
    cwd: project,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_COLOR: "1" },
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  const origin = `http://127.0.0.1:${port}`;
  try {
    await waitUntilServing(origin, child, () => output);
  } catch (error) {
    stopGroup(child);
    throw error;
  }
  return {
    origin,
    stateDir,
    output: () => output,
    stop: async () => {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      stopGroup(child);
      await exited;
    },
  };
}

async function waitUntilServing(origin: string, child: ChildProcess, output: () => string): Promise<void> {
  const serving = async () => {
    if (child.exitCode !== null) {
      const message = `wrangler dev exited with ${child.exitCode}:\n${output()}`;
      throw output().includes("Address already in use") ? new PortTaken(message) : new Error(message);
    }
    try {
      const response = await fetch(`${origin}/`, { signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      return response.status === 200;
    } catch {
      return false; // Not listening yet.
    }
  };
  await eventually(serving, 90_000, { pollMs: 250 }).catch((error: Error) => {
    throw error.message.startsWith("wrangler dev exited") ? error : new Error(`wrangler dev did not serve ${origin} within 90 s:\n${output()}`);
  });
}

function stopGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // Already gone.
  }
}
