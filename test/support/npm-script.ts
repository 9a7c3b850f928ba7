import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";

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

/** What a script that ran to its end printed, and its exit code. */
export interface ScriptRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * One of the project's scripts (`scripts/<name>.ts`, what `npm run <name>` runs) as an operator
 * runs it, to its end: on the project's Node, with `PATH` and `env` only, since the test's own
 * shell may hold settings the script reads (a Cloudflare or Sentry token, say).
 */
export async function runProjectScript(name: string, args: readonly string[], env: Record<string, string | undefined>): Promise<ScriptRun> {
  // The project's ProcessEnv type lists the Worker's variables, which the scripts do not need.
  const childEnv = { PATH: process.env.PATH, ...env } as Record<string, string | undefined> as NodeJS.ProcessEnv;
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [`scripts/${name}.ts`, ...args], { cwd: root, env: childEnv });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as ScriptRun;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
