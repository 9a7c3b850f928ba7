import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

import { CHROMIUM_PATH } from "../support/chromium";

/** Playwright cannot download a browser here, so the tests use Debian's, installing it when they can. */
export default function ensureChromium(): void {
  if (existsSync(CHROMIUM_PATH)) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}. Install it with: sudo apt-get update && sudo apt-get install -y chromium`,
    );
  }
  console.log("Installing Debian's chromium package for the browser tests…");
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "-qq", "chromium"], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`apt-get ran, but ${CHROMIUM_PATH} is still missing`);
}
