import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const WRK = "/usr/bin/wrk";

/** wrk is Debian's; the benchmark installs it the first time, as root, before any Worker starts. */
export function ensureWrk(): void {
  if (existsSync(WRK)) return;
  if (process.getuid?.() !== 0) throw new Error("wrk is missing: sudo apt-get install -y wrk");
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "-qq", "wrk"], { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
}

export interface Load {
  url: string;
  /** Sent as the body of every request; none means GET. */
  body?: Buffer;
  connections: number;
  seconds: number;
  /** A request taking longer than this counts as failed (wrk's default: 2 s). */
  timeoutSeconds?: number;
}

const scripts = mkdtempSync(join(tmpdir(), "bench-wrk-"));

/**
 * Writes a file for wrk to read, in one step (written aside, then renamed): loads started together
 * share their files, and a wrk must never read one half written, or it sends a truncated body.
 */
function writeWhole(path: string, contents: string | Buffer): void {
  const aside = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(aside, contents);
  renameSync(aside, path);
}

export interface LoadResult {
  perSecond: number;
  requests: number;
}

/** Requests per second that answered 2xx, from a wrk run on loopback (asynchronous: never blocks the loop). */
export async function requestsPerSecond(load: Load): Promise<number> {
  return (await runLoad(load)).perSecond;
}

export async function runLoad(load: Load): Promise<LoadResult> {
  const args = ["-t", "1", "-c", String(load.connections), "-d", `${load.seconds}s`, "--timeout", `${load.timeoutSeconds ?? 2}s`, "--latency"];
  if (load.body) {
    const bodyFile = join(scripts, `body-${load.body.length}`);
    writeWhole(bodyFile, load.body);
    const script = join(scripts, `post-${load.body.length}.lua`);
    writeWhole(
      script,
      [
        'wrk.method = "POST"',
        'wrk.headers["Content-Type"] = "text/plain;charset=UTF-8"',
        `local file = io.open(${JSON.stringify(bodyFile)}, "rb")`,
        'wrk.body = file:read("*all")',
        "file:close()",
      ].join("\n"),
    );
    args.push("-s", script);
  }
  args.push(load.url);
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(WRK, args, { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    child.on("error", reject);
    // "close", not "exit": only then has all of its output been read.
    child.on("close", (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}:\n${text}`))));
  });
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(output);
  if (!rate) throw new Error(`wrk printed no rate:\n${output}`);
  // wrk prints these lines only when something went wrong; a figure built on failures means nothing.
  if (/Non-2xx or 3xx responses|Socket errors/.test(output)) throw new Error(`wrk saw failures against ${load.url}:\n${output}`);
  return { perSecond: Number(rate[1]), requests: Number(/(\d+) requests in/.exec(output)?.[1] ?? Number.NaN) };
}
