/**
 * Remix classic compiler, targeting workerd: the server bundle is one ESM file that
 * wrangler uploads as is (`no_bundle`), so every dependency is bundled and resolved
 * with the `workerd` export conditions. Only the runtime's own modules stay imports:
 * `node:*` (Remix externalises those itself) and `cloudflare:*`. In development
 * (`npm run dev`), the dependencies stay imports too and wrangler bundles them when it
 * restarts the Worker: each rebuild is then some 1.6 s shorter (scripts/start.ts).
 *
 * @type {import('@remix-run/dev').AppConfig}
 */
const development = process.env.NODE_ENV === "development";

export default {
  ignoredRouteFiles: ["**/.*", "**/*.test.*"],
  server: "./worker/index.ts",
  // `npm run dev` (`remix watch`, NODE_ENV=development) builds beside, never over, the production build.
  serverBuildPath: development ? ".dev/build/index.js" : "build/index.js",
  assetsBuildDirectory: development ? ".dev/public/build" : "public/build",
  publicPath: "/build/",
  serverConditions: ["workerd", "worker", "browser"],
  serverDependenciesToBundle: development ? [] : [/^(?!cloudflare:)/],
  serverMainFields: ["browser", "module", "main"],
  // Minified for deploys; not in development, for speed.
  serverMinify: !development,
  serverModuleFormat: "esm",
  serverPlatform: "neutral",
  future: {
    v3_fetcherPersist: true,
    v3_relativeSplatPath: true,
    v3_throwAbortReason: true,
    v3_lazyRouteDiscovery: true,
    // Off on purpose: with single fetch, a key press during hydration ends in React error #345
    // ("Root did not complete"; remix-run/remix#10214), seen here in Chromium under load.
    v3_singleFetch: false,
  },
};
