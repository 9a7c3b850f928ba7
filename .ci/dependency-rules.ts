/**
 * The tunnel's layering, checked by dependency-cruiser in `npm run typecheck` (decision 012).
 * Inside `packages/tunnel/src/`, each folder imports only itself and the folders below it:
 *   root (the tunnel, its stages and answers) → spool/ → upstream/ → envelope/ → request/ → shared/
 * The package's boundary is its own: its `tsconfig.json` (`rootDir`) refuses an import from outside
 * it, and its `exports` refuse a reach past its two entries. No import cycle anywhere.
 */
import type { IConfiguration, IForbiddenRuleType } from "dependency-cruiser";

const SOURCE = "packages/tunnel/src";

const below: Record<string, string> = {
  shared: "shared",
  request: "request|shared",
  envelope: "envelope|request|shared",
  upstream: "upstream|envelope|request|shared",
  spool: "spool|upstream|envelope|request|shared",
};

/** A test below the root may also use the harness every test of a Worker uses (`harness.ts`), and nothing else above it. */
const TEST = "\\.(workerd\\.)?test\\.ts$";

const layers: IForbiddenRuleType[] = Object.entries(below).flatMap(([folder, allowed]): IForbiddenRuleType[] => [
  {
    name: `tunnel-${folder}-imports-down`,
    comment: `${SOURCE}/${folder}/ may import only ${allowed.split("|").join(", ")}: nothing above it, and never the tunnel's root.`,
    severity: "error",
    from: { path: `^${SOURCE}/${folder}/`, pathNot: TEST },
    to: { path: `^${SOURCE}/`, pathNot: `^${SOURCE}/(${allowed})/` },
  },
  {
    name: `tunnel-${folder}-tests-import-down`,
    comment: `A test in ${SOURCE}/${folder}/ may import ${allowed.split("|").join(", ")} and the test harness, harness.ts.`,
    severity: "error",
    from: { path: `^${SOURCE}/${folder}/.*${TEST}` },
    to: { path: `^${SOURCE}/`, pathNot: `^${SOURCE}/((${allowed})/|harness\\.ts$)` },
  },
]);

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
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(build|\\.dev|\\.cache|public/build)/|/dist/" },
    tsConfig: { fileName: "tsconfig.json" },
    // Type-only imports count: a cycle of types is still a cycle for a reader.
    tsPreCompilationDeps: true,
  },
};

export default configuration;
