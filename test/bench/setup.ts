import { keepToTheWorldsCores } from "./cores";

// Before any benchmark starts a Worker or a load: see cores.ts.
keepToTheWorldsCores();
