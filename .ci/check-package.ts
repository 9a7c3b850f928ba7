// The tunnel package as an adopter receives it: `npm pack`, then `publint --strict`, then
// `@arethetypeswrong/cli`, then a fresh consumer project type-checked against the tarball with
// `skipLibCheck: false`, under the module resolutions and the type sources Workers projects use.
// One line per check; the first failure ends it with exit 1. Run by `.ci/run`.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name: string) => join(root, "node_modules/.bin", name);
/** The project's own Node first, as npm scripts have it: wrangler refuses an older one. */
const env = { ...process.env, PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH ?? ""}`, WRANGLER_SEND_METRICS: "false" };
const rootPackage = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { devDependencies: Record<string, string>; dependencies: Record<string, string> };

/** What an adopter writes against the package: every export of every entry, in a Worker's shape. */
const CONSUMER = `import { ConfigError, createTunnel, dsnFacts, optionsFromEnv, RepeatedLines, variableReader } from "@edge-monitoring/tunnel";
import type { ClientShare, LogLine, TunnelDescription, TunnelEnv, TunnelOptions, TunnelRuntime, TunnelWorker } from "@edge-monitoring/tunnel";
import { spool, spoolFromEnv, type SpoolEnv, type SpoolHeartbeatLine, type SpoolOptions } from "@edge-monitoring/tunnel/spool";
import { cspReports } from "@edge-monitoring/tunnel/csp";
import { compressedBodies } from "@edge-monitoring/tunnel/compressed";
import { TUNNEL_ANSWERS, type TunnelAnswerCode } from "@edge-monitoring/tunnel/testing";
import { tunnelMiddleware } from "@edge-monitoring/tunnel/hono";
import { Hono } from "hono";

const env: TunnelEnv & SpoolEnv = { SENTRY_DSN: "https://0123456789abcdef0123456789abcdef@o1.ingest.us.sentry.io/2", TUNNEL_RATE_LIMITING: "off" };
const runtime: TunnelRuntime = { log: (line: LogLine) => console.log(line) };
const tunnel: TunnelWorker = createTunnel({ ...optionsFromEnv(env), spool: spoolFromEnv(env), cspReports: cspReports(), compressedBodies: compressedBodies() }, runtime);
const share: ClientShare = tunnel.clientShare;
const code: TunnelAnswerCode = "not_found";
const lines = new RepeatedLines<{ event: string }>(10, (line) => console.log(line.repeats));
const read = variableReader({ A: "1" });
const description: TunnelDescription = tunnel.describe();
const spooled: SpoolOptions = { queue: { send: async () => {} }, queueName: "staging-spool" };
const options: TunnelOptions = { dsn: env.SENTRY_DSN as string, route: "/s7t8g9", limiter: "off", spool: spool(spooled) };
export const staging = createTunnel(options, runtime);
export const app = new Hono().use(tunnelMiddleware(tunnel));

export default {
  async fetch(request: Request): Promise<Response> {
    const answer = await tunnel.handle(request);
    if (answer) return answer;
    return new Response([description.pages_post_to, tunnel.pageUrl(), tunnel.cspReportPath, TUNNEL_ANSWERS[code][0], share.periodSeconds, read, lines, ConfigError.name, dsnFacts(env.SENTRY_DSN as string)?.envelopeUrl].join());
  },
  async queue(batch: MessageBatch<unknown>): Promise<void> {
    if (tunnel.handlesQueue(batch.queue)) await tunnel.queue(batch);
  },
  async scheduled(): Promise<void> {
    const heartbeat: SpoolHeartbeatLine | undefined = await tunnel.spoolHeartbeat();
    console.log(heartbeat?.status);
  },
};
`;

const WRANGLER_TOML = `name = "consumer"
main = "worker.ts"
compatibility_date = "2026-11-02"
compatibility_flags = ["nodejs_compat"]
`;

/** The ways Workers projects resolve modules and get the Workers' types. */
const SETUPS = [
  { name: "moduleResolution Bundler, @cloudflare/workers-types", module: "ESNext", resolution: "Bundler", types: ["@cloudflare/workers-types"], include: ["worker.ts"] },
  { name: "moduleResolution NodeNext, @cloudflare/workers-types", module: "NodeNext", resolution: "NodeNext", types: ["@cloudflare/workers-types"], include: ["worker.ts"] },
  { name: "moduleResolution Bundler, the runtime types of `wrangler types`", module: "ESNext", resolution: "Bundler", types: [], include: ["worker.ts", "worker-configuration.d.ts"] },
];

async function step(name: string, work: () => Promise<unknown>): Promise<void> {
  try {
    await work();
    console.log(`package: ${name}: ok`);
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    console.error(`package: ${name}: failed\n${[failed.stdout, failed.stderr].filter(Boolean).join("\n") || failed.message}`);
    process.exit(1);
  }
}

const scratch = mkdtempSync(join(tmpdir(), "tunnel-package-"));
try {
  await run("npm", ["pack", "--pack-destination", scratch], { cwd: join(root, "packages/tunnel"), env });
  const tarball = join(scratch, readdirSync(scratch).find((name) => name.endsWith(".tgz"))!);
  const listed = (await run("tar", ["tzf", tarball])).stdout.split("\n").filter(Boolean);
  await step(`the tarball holds dist/, the README, the CHANGELOG, the stability contract and the licence only (${listed.length} files)`, async () => {
    const strays = listed.filter((path) => !/^package\/(dist\/|README\.md$|CHANGELOG\.md$|STABILITY\.md$|LICENSE$|package\.json$)/.test(path));
    if (strays.length > 0) throw new Error(`unexpected: ${strays.join(", ")}`);
  });
  await step("the JavaScript carries no doc comment (each Worker would upload it), the types keep theirs", async () => {
    await run("tar", ["xzf", tarball, "-C", scratch]);
    const files = listed.filter((path) => /^package\/dist\/.*\.(js|d\.ts)$/.test(path)).map((path) => [path, readFileSync(join(scratch, path), "utf8")] as const);
    const commented = files.filter(([path, text]) => path.endsWith(".js") && text.includes("/**")).map(([path]) => path);
    if (commented.length > 0) throw new Error(`doc comments in ${commented.join(", ")}`);
    if (!files.some(([path, text]) => path.endsWith(".d.ts") && text.includes("/**"))) throw new Error("no .d.ts has a doc comment");
  });
  await step("every JavaScript file's source map carries the TypeScript it was built from, so that a mapped stack trace reads as the source", async () => {
    const unmapped = listed
      .filter((path) => /^package\/dist\/.*\.js$/.test(path))
      .filter((path) => {
        if (!listed.includes(`${path}.map`)) return true;
        const map = JSON.parse(readFileSync(join(scratch, `${path}.map`), "utf8")) as { sources: string[]; sourcesContent?: (string | null)[] };
        return map.sources.some((source, index) => !source.endsWith(".ts") || !map.sourcesContent?.[index]);
      });
    if (unmapped.length > 0) throw new Error(`not mapped to their TypeScript: ${unmapped.join(", ")}`);
  });
  await step("publint --strict", () => run(bin("publint"), ["--strict", tarball], { env }));
  await step("@arethetypeswrong/cli (ESM only)", () => run(bin("attw"), [tarball, "--profile", "esm-only"], { env }));

  const consumer = join(scratch, "consumer");
  await run("mkdir", [consumer]);
  writeFileSync(
    join(consumer, "package.json"),
    JSON.stringify({
      name: "consumer",
      private: true,
      type: "module",
      dependencies: {
        "@edge-monitoring/tunnel": `file:${tarball}`,
        "@sentry/core": rootPackage.dependencies["@sentry/core"],
        hono: rootPackage.devDependencies.hono,
      },
      devDependencies: { typescript: rootPackage.devDependencies.typescript, "@cloudflare/workers-types": rootPackage.devDependencies["@cloudflare/workers-types"] },
    }),
  );
  writeFileSync(join(consumer, "worker.ts"), CONSUMER);
  writeFileSync(join(consumer, "wrangler.toml"), WRANGLER_TOML);
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: consumer, env });
  await run(bin("wrangler"), ["types"], { cwd: consumer, env });
  for (const setup of SETUPS) {
    const config = `tsconfig.${SETUPS.indexOf(setup)}.json`;
    writeFileSync(
      join(consumer, config),
      JSON.stringify({
        include: setup.include,
        compilerOptions: { strict: true, skipLibCheck: false, noEmit: true, target: "ES2022", lib: ["ES2023"], module: setup.module, moduleResolution: setup.resolution, types: setup.types },
      }),
    );
    await step(`a consumer type-checks with skipLibCheck false, ${setup.name}`, () => run(join(consumer, "node_modules/.bin/tsc"), ["-p", config], { cwd: consumer, env }));
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
