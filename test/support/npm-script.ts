import { spawn } from "node:child_process";

import { eventually } from "@edge-monitoring/tunnel/testing";

import { root } from "./workerd";

export interface RunningScript {
  /** Ctrl-C, as a developer stops it; resolves once the script and its URLs are gone. */
  stop(): Promise<void>;
}

/** Whether the URL answers 2xx. */
async function serving(url: string): Promise<boolean> {
  return (await fetch(url, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined))?.ok === true;
}

/**
 * Runs `npm <args>` as the README says (in `cwd`, this project by default), until every URL
 * serves. Its own process group, so that stopping it stops what it started (Remix, wrangler,
 * workerd, Spotlight) and frees the ports for the next test that uses the README's.
 */
export async function startNpmScript(args: string[], urls: string[], env: Record<string, string> = {}, cwd = root): Promise<RunningScript> {
  const started = spawn("npm", args, { cwd, detached: true, stdio: "ignore", env: { ...process.env, ...env } });
  const exited = new Promise((resolve) => started.once("exit", resolve));
  const stop = async () => {
    if (started.pid !== undefined && started.exitCode === null) {
      process.kill(-started.pid, "SIGINT");
      await exited;
    }
    await eventually(async () => !(await Promise.all(urls.map(serving))).some(Boolean), 10_000, { pollMs: 100 });
  };
  try {
    await eventually(async () => (await Promise.all(urls.map(serving))).every(Boolean), 110_000, { pollMs: 250 });
  } catch (error) {
    await stop();
    throw error;
  }
  return { stop };
}
