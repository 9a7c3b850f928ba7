import { execFile } from "node:child_process";
import { promisify } from "node:util";

import { describe, expect, it } from "vitest";

const BIN = new URL("./create-spool.ts", import.meta.url).pathname;

/** `npx tunnel-spool-create …` as an operator runs it, with no wrangler on the PATH to reach. */
async function createSpool(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env: { PATH: "" } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

describe("npx tunnel-spool-create: its flags", () => {
  it("answers --help with its usage, and creates nothing", async () => {
    const { code, stdout, stderr } = await createSpool("--help");
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toMatch(/^Usage: npx tunnel-spool-create \[--queue NAME\] \[--dead-letter-queue NAME\] \[--bucket NAME\]\n/);
  });

  it.each([
    [["--nope"], "Unknown option '--nope'"],
    [["--queue"], "Option '--queue <value>' argument missing"],
    [["--bucket", "Spool_1"], '--bucket must be lowercase letters, digits and dashes, got "Spool_1"'],
  ])("says what is wrong with %j in words, never a stack trace, and exits 2", async (args, said) => {
    const { code, stdout, stderr } = await createSpool(...args);
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr.split("\n")[0]).toBe(said);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
