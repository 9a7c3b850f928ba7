// What `npm start` and `npm run dev` decide before they start anything: the ports, the settings the
// developer has not made, and whether the production build is current. Functions, for the tests.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";

import { unstable_getVarsForDev } from "wrangler";

import { PLACEHOLDER_DSN } from "../app/monitoring/local-defaults.ts";
import { resolveRelease } from "./release.ts";

/** The port in `variable`, or `fallback` when it is unset; a problem to say when it is no port. */
export function portFrom(variable: string, fallback: number, env: Record<string, string | undefined> = process.env): { port: number } | { problem: string } {
  const value = (env[variable] ?? "").trim();
  if (value === "") return { port: fallback };
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) return { problem: `${variable} must be a port number, got "${value}"` };
  return { port };
}

/** Whether anything answers on the port, on IPv4 or IPv6 loopback (`localhost` may be either). */
export async function listening(port: number): Promise<boolean> {
  const answers = (host: string) =>
    new Promise<boolean>((resolve) => {
      const socket = connect({ host, port });
      socket.once("connect", () => {
        socket.end();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
  return (await answers("127.0.0.1")) || (await answers("::1"));
}

/**
 * The variables the developer set, with their values, read by wrangler's own code as `wrangler dev`
 * reads them: `.dev.vars`, or else `.env` and `.env.local`, in every form its parser takes
 * (`KEY=value`, `KEY: value`, `export KEY=…`, quotes, `${OTHER}` in `.env`).
 */
export function localVariables(dir = "."): Record<string, string> {
  const read = unstable_getVarsForDev(join(dir, "wrangler.toml"), undefined, {}, undefined, true);
  return Object.fromEntries(Object.entries(read).map(([name, binding]) => [name, String(binding.value)]));
}

/**
 * The settings a local run gives wrangler when the developer has not made them: the placeholder DSN,
 * the development environment, and Spotlight in Sentry's place.
 */
export function unsetLocalDefaults(spotlightOrigin: string, defined: ReadonlySet<string>): [string, string][] {
  const defaults = { SENTRY_DSN: PLACEHOLDER_DSN, SENTRY_ENVIRONMENT: "development", TUNNEL_UPSTREAM_ORIGIN: spotlightOrigin };
  return Object.entries(defaults).filter(([name]) => !defined.has(name));
}

/** What the production build is made from: a change to any of these makes it stale. */
const BUILD_SOURCES = ["app", "worker", "public", "remix.config.js", "package-lock.json"];

/**
 * Whether `build/` was made from the sources as they are and for this commit's release, so that
 * `npm start` right after `npm test` or another `npm start` serves it without building again.
 */
export function buildIsCurrent(dir = ".", release: () => string = resolveRelease): boolean {
  const built = join(dir, "build/index.js");
  const releaseFile = join(dir, "app/release.generated.ts");
  if (!existsSync(built) || !existsSync(releaseFile)) return false;
  let current: string;
  try {
    current = release();
  } catch {
    return false;
  }
  if (!readFileSync(releaseFile, "utf8").includes(JSON.stringify(current))) return false;
  const builtAt = statSync(built).mtimeMs;
  const newer = (path: string): boolean => {
    const stat = statSync(path);
    if (!stat.isDirectory()) return stat.mtimeMs > builtAt;
    // `public/build` is the build's own output.
    return readdirSync(path).some((name) => (path !== join(dir, "public") || name !== "build" ? newer(join(path, name)) : false));
  };
  return !BUILD_SOURCES.some((source) => existsSync(join(dir, source)) && newer(join(dir, source)));
}
