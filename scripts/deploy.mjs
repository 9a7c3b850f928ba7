// `npm run deploy`, after the build: uploads the source maps to Sentry when SENTRY_AUTH_TOKEN is
// set, then deploys the bundle the build prepared. Without a token it says so and deploys anyway.
import { execFileSync } from "node:child_process";

import { resolveRelease } from "./release.mjs";

const run = (command, args) => execFileSync(command, args, { stdio: "inherit" });

if (process.env.SENTRY_AUTH_TOKEN) {
  const release = resolveRelease();
  // SENTRY_ORG and SENTRY_PROJECT come from the environment, as sentry-cli reads them.
  run("sentry-cli", ["releases", "new", release]);
  run("sentry-cli", ["sourcemaps", "upload", "--release", release, "public/build", "build"]);
  run("sentry-cli", ["releases", "finalize", release]);
} else {
  console.warn("SENTRY_AUTH_TOKEN is not set: source maps are not uploaded, stack traces stay minified.");
}
run("wrangler", ["deploy"]);
