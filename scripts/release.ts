// The release that the browser and the Worker both report: SENTRY_RELEASE when set at build time,
// otherwise the full commit SHA of the checkout. Run directly, it writes app/release.generated.ts.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export function resolveRelease(): string {
  const fromEnv = (process.env.SENTRY_RELEASE ?? "").trim();
  if (fromEnv) return fromEnv;
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    throw new Error("No release: this is not a git checkout with a commit. Set SENTRY_RELEASE to build.");
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const release = resolveRelease();
  writeFileSync(
    new URL("../app/release.generated.ts", import.meta.url),
    `// Written by scripts/release.ts at build time; not committed.\nexport const RELEASE = ${JSON.stringify(release)};\n`,
  );
  console.log(`release ${release}`);
}
