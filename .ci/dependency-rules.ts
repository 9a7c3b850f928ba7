/**
 * The tunnel's house, checked by dependency-cruiser in `npm run typecheck` (decisions 012, 038).
 * `packages/tunnel/src/` holds its entries (`index`, `spool`, `csp`, `compressed`, `hono`,
 * `testing`) and rooms; each room imports only itself and the rooms below it:
 *   setup/ (what a host calls once: options, settings, the composition root) → stages/ (one
 *   request's stages and answers) → spool/ → upstream/ → envelope/ → request/ → shared/
 * The stages are given the settings and the capabilities' parts, so they may name those types from
 * setup/, type-only. `testing/` is the harness, above all rooms. The package's boundary is its own:
 * its `tsconfig.json` (`rootDir`) refuses an import from outside it, and its `exports` refuse a
 * reach past its entries. No import cycle anywhere.
 */
import type { IConfiguration, IForbiddenRuleType } from "dependency-cruiser";

const SOURCE = "packages/tunnel/src";

const below: Record<string, string> = {
  shared: "shared",
  request: "request|shared",
  envelope: "envelope|request|shared",
  upstream: "upstream|envelope|request|shared",
  spool: "spool|upstream|envelope|request|shared",
  stages: "stages|spool|upstream|envelope|request|shared",
  setup: "setup|stages|spool|upstream|envelope|request|shared",
};

/** A test inside a room may also use the harness every test of a Worker uses (`testing/harness.ts`), and nothing else above it. */
const TEST = "\\.(workerd\\.)?test\\.ts$";

const layers: IForbiddenRuleType[] = Object.entries(below).flatMap(([folder, allowed]): IForbiddenRuleType[] => [
  {
    name: `tunnel-${folder}-imports-down`,
    comment: `${SOURCE}/${folder}/ may import only ${allowed.split("|").join(", ")}: no room above it, no entry, never the harness.`,
    severity: "error",
    from: { path: `^${SOURCE}/${folder}/`, pathNot: TEST },
    to: { path: `^${SOURCE}/`, pathNot: `^${SOURCE}/(${folder === "stages" ? `${allowed}|setup` : allowed})/` },
  },
  {
    name: `tunnel-${folder}-tests-import-down`,
    comment: `A test in ${SOURCE}/${folder}/ may import ${allowed.split("|").join(", ")} and the test harness.`,
    severity: "error",
    from: { path: `^${SOURCE}/${folder}/.*${TEST}` },
    to: { path: `^${SOURCE}/`, pathNot: `^${SOURCE}/((${allowed})/|testing/)` },
  },
]);

/** What the stages may name of setup/: the types they are given (the settings, the capabilities' parts), nothing that runs. */
const stagesTypesOnly: IForbiddenRuleType[] = [
  {
    name: "tunnel-stages-given-types-only",
    comment: `${SOURCE}/stages/ may name types from setup/, never run its code.`,
    severity: "error",
    from: { path: `^${SOURCE}/stages/` },
    to: { path: `^${SOURCE}/setup/`, dependencyTypesNot: ["type-only"] },
  },
  {
    name: "tunnel-stages-given-settings-and-parts",
    comment: `${SOURCE}/stages/ may name only the settings' and the capabilities' types of setup/.`,
    severity: "error",
    from: { path: `^${SOURCE}/stages/` },
    to: { path: `^${SOURCE}/setup/(?!(settings|capability)\\.ts$)` },
  },
];

/**
 * The whole-package suites use the tunnel as adopters do: through its entries; `test/support/`
 * holds the helpers that are not shipped (the settings of one stage, workerd's message batches).
 */
const suitesUseEntries: IForbiddenRuleType = {
  name: "tunnel-suites-use-entries",
  comment: "packages/tunnel/test/ may import the package's entries and testing/, nothing behind them.",
  severity: "error",
  from: { path: "^packages/tunnel/test/", pathNot: "^packages/tunnel/test/support/" },
  to: { path: `^${SOURCE}/`, pathNot: `^${SOURCE}/((index|spool|csp|compressed|hono|testing)\\.ts$|testing/)` },
};

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
    ...stagesTypesOnly,
    suitesUseEntries,
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
