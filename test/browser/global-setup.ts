import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

import { BUNDLED_LISTS } from "../../scripts/filter-lists";
import { CHROMIUM_PATH } from "../support/chromium";

/** Debian's packages the browser tests need, and a file each installs. */
const PACKAGES = [
  { name: "chromium", file: CHROMIUM_PATH },
  // uBlock Origin's default filter lists, for the blocker tests.
  { name: "webext-ublock-origin-chromium", file: BUNDLED_LISTS[0]! },
];

/** Playwright cannot download a browser here, so the tests use Debian's, installing it when they can. */
export default function ensureDebianPackages(): void {
  const missing = PACKAGES.filter(({ file }) => !existsSync(file));
  if (missing.length === 0) return;
  const names = missing.map(({ name }) => name);
  if (process.getuid?.() !== 0) {
    throw new Error(`The browser tests need Debian's ${names.join(" and ")}. Install them with: sudo apt-get update && sudo apt-get install -y ${names.join(" ")}`);
  }
  console.log(`Installing Debian's ${names.join(" and ")} for the browser tests…`);
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "-qq", ...names], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  const still = missing.filter(({ file }) => !existsSync(file));
  if (still.length > 0) throw new Error(`apt-get ran, but ${still.map(({ file }) => file).join(" and ")} is still missing`);
}
