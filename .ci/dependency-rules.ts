/**
 * The tunnel's layering, checked by dependency-cruiser in `npm run typecheck` (decision 012).
 * Inside `app/tunnel/`, each folder imports only itself and the folders below it:
 *   root (the tunnel, its stages and answers) → spool/ → upstream/ → envelope/ → request/ → shared/
 * The tunnel imports nothing of the project outside `app/tunnel/`, so that a copy of the folder
 * alone runs (`docs/adopting.md`). Outside it, production code goes through `app/tunnel/index.ts`,
 * tests and benchmarks through it or `app/tunnel/testing.ts`. No import cycle anywhere.
 */
import type { IConfiguration, IForbiddenRuleType } from "dependency-cruiser";

const below: Record<string, string> = {
  shared: "shared",
  request: "request|shared",
  envelope: "envelope|request|shared",
  upstream: "upstream|envelope|request|shared",
  spool: "spool|upstream|envelope|request|shared",
};

const layers: IForbiddenRuleType[] = Object.entries(below).map(([folder, allowed]) => ({
  name: `tunnel-${folder}-imports-down`,
  comment: `app/tunnel/${folder}/ may import only ${allowed.split("|").join(", ")}: nothing above it, and never the tunnel's root.`,
  severity: "error",
  from: { path: `^app/tunnel/${folder}/` },
  to: { path: "^app/tunnel/", pathNot: `^app/tunnel/(${allowed})/` },
}));

const configuration: IConfiguration = {
  forbidden: [
    {
      name: "no-cycle",
      comment: "An import cycle: one module cannot be understood, tested or loaded without the other.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    ...layers,
    {
      name: "tunnel-stands-alone",
      comment: "app/tunnel/ imports nothing of the project outside it, but for its tests: a copy of the folder alone must run.",
      severity: "error",
      from: { path: "^app/tunnel/", pathNot: "\\.(test|workerd)\\.ts$" },
      to: { path: "^(app|worker|test|scripts|\\.ci)/", pathNot: "^app/tunnel/" },
    },
    {
      name: "tunnel-through-its-index",
      comment: "Outside app/tunnel/, production code uses the tunnel through its public surface, app/tunnel/index.ts.",
      severity: "error",
      from: { path: "^(app|worker|scripts)/", pathNot: "^app/tunnel/" },
      to: { path: "^app/tunnel/", pathNot: "^app/tunnel/index\\.ts$" },
    },
    {
      name: "tests-through-the-tunnels-entries",
      comment: "Tests and benchmarks outside app/tunnel/ use its public surface or its testing entry, never a module behind them.",
      severity: "error",
      from: { path: "^test/" },
      to: { path: "^app/tunnel/", pathNot: "^app/tunnel/(index|testing)\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(build|\\.dev|\\.cache|public/build)/" },
    tsConfig: { fileName: "tsconfig.json" },
    // Type-only imports count: a cycle of types is still a cycle for a reader.
    tsPreCompilationDeps: true,
  },
};

export default configuration;
