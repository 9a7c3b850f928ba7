import { spawnSync } from "node:child_process";
import { createServer } from "node:net";

import { describe, expect, it } from "vitest";

const root = new URL("..", import.meta.url).pathname;

describe("npm start and npm run dev, with a port taken", () => {
  it.each([
    ["PORT", "the app"],
    ["SPOTLIGHT_PORT", "Spotlight"],
  ])("name the taken %s and how to choose another, before building anything", { timeout: 30_000 }, async (variable, what) => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const { port } = taken.address() as { port: number };
    try {
      const result = spawnSync(process.execPath, ["scripts/start.ts"], {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, PORT: "1", SPOTLIGHT_PORT: "2", [variable]: String(port) },
        timeout: 30_000,
      });
      expect(result.status).toBe(1);
      expect(result.stderr.trim()).toBe(`Port ${port} (${what}) is taken. Stop what uses it, or choose another: ${variable}=${port + 1} npm start`);
      // Nothing else was said: no build ran.
      expect(result.stdout).toBe("");
    } finally {
      taken.close();
    }
  });
});
