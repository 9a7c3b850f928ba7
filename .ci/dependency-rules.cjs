/**
 * The tunnel's layering, checked by dependency-cruiser in `npm run typecheck` (decision 012).
 * Inside `app/tunnel/`, each folder imports only itself and the folders below it:
 *   root (the tunnel, its stages and answers) → spool/ → upstream/ → envelope/ → request/ → shared/
 * Outside it, everything goes through `app/tunnel/index.ts`. No import cycle anywhere.
 * @type {import('dependency-cruiser').IConfiguration}
 */
const below = {
  shared: "shared",
  request: "request|shared",
  envelope: "envelope|request|shared",
  upstream: "upstream|envelope|request|shared",
  spool: "spool|upstream|envelope|request|shared",
};

module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      comment: "An import cycle: one module cannot be understood, tested or loaded without the other.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...Object.entries(below).map(([folder, allowed]) => ({
      name: `tunnel-${folder}-imports-down`,
      comment: `app/tunnel/${folder}/ may import only ${allowed.split("|").join(", ")}: nothing above it, and never the tunnel's root.`,
      severity: "error",
      from: { path: `^app/tunnel/${folder}/` },
      to: { path: "^app/tunnel/", pathNot: `^app/tunnel/(${allowed})/` },
    })),
    {
      name: "tunnel-through-its-index",
      comment: "Outside app/tunnel/, the tunnel is used through its public surface, app/tunnel/index.ts.",
      severity: "error",
      // The ablation fixture measures the stages themselves, so it alone may reach behind the index.
      from: { path: "^(app|worker|test|scripts)/", pathNot: "^(app/tunnel/|test/bench/fixtures/ablation\\.ts$)" },
      to: { path: "^app/tunnel/", pathNot: "^app/tunnel/index\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(build|\\.dev|public/build)/" },
    tsConfig: { fileName: "tsconfig.json" },
    // Type-only imports count: a cycle of types is still a cycle for a reader.
    tsPreCompilationDeps: true,
  },
};
