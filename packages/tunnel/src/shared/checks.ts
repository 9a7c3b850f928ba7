import { ConfigError, originOf, variableReader, type VariableRead } from "./variables.ts";

/** A Workers Rate Limiting binding, or anything that answers as one. */
export type Limiter = Pick<RateLimit, "limit">;

/**
 * What a setting is called where it was given: the option's own name, or, for options read by
 * `optionsFromEnv`, the Worker variable or binding it was read from. Refusals name it.
 */
export type SettingNames = (option: string) => string;

/** Where `optionsFromEnv` leaves the variable each option was read from. */
export const READ_FROM: unique symbol = Symbol("read from");

/** Options that may say where each came from. */
export type NamedOptions = { [READ_FROM]?: Readonly<Record<string, string>> };

/**
 * The options one table reads from a Worker's `env` (`table`: each option's variable and how its
 * text reads), unset ones left out so that their defaults apply, each named after its variable
 * (and `bindings` after theirs) for the refusals. A number's text that is not digits is left as it
 * came, for the option's own check to refuse; what an option means (an origin, a DSN, a route, a
 * whole number) is checked once, as for the options given in code.
 */
export function optionsFromTable<Option extends string>(
  env: object,
  table: Readonly<Record<Option, readonly [string, VariableRead]>>,
  bindings: Readonly<Record<string, string>>,
): Record<string, unknown> & NamedOptions {
  const read = variableReader(env as Record<string, unknown>);
  const options: Record<string, unknown> = {};
  const names: Record<string, string> = { ...bindings };
  for (const [option, [name, how]] of Object.entries<readonly [string, VariableRead]>(table)) {
    names[option] = name;
    const value = how === "list" ? read.list(name) : how === "onOrOff" ? read.onOrOff(name, undefined) : read.text(name) || undefined;
    if (value !== undefined) options[option] = how === "number" && /^\d+$/.test(String(value)) ? Number(value) : value;
  }
  return Object.assign(options, { [READ_FROM]: names });
}

/**
 * The name a refusal of `option` gives: its variable when an adapter read it from `env`, else the
 * option's own, under `prefix` (`spool.`) for the options of a capability.
 */
export function settingNames(options: object, prefix = ""): SettingNames {
  const names = (options as NamedOptions)[READ_FROM];
  return (option) => names?.[option] ?? `${prefix}${option}`;
}

/**
 * The checks of what an option means, refusing with the name `names` gives it: the types TypeScript
 * already holds are trusted, and a Worker variable's text was read into them (`optionsFromTable`).
 */
export function checks(names: SettingNames) {
  const refuse = (option: string, problem: string) => new ConfigError(names(option), problem);
  /**
   * A binding that has each of `methods`: text in `[vars]` where a binding belongs, or the wrong
   * object in code, would otherwise lose what it was for without a word, on the request that needs it.
   */
  const binding = <Binding>(option: string, value: unknown, methods: readonly string[], kind: string, declaration: string): Binding => {
    const object = typeof value === "object" && value !== null ? value : undefined;
    const missing = methods.find((method) => typeof (object && Reflect.get(object, method)) !== "function");
    if (missing === undefined) return value as Binding;
    const got = object ? `it has no ${missing}() method` : `got ${JSON.stringify(value) ?? typeof value}`;
    throw refuse(option, `is not ${kind} (${got}): pass a ${declaration} binding`);
  };
  return {
    positiveInteger(option: string, value: unknown, fallback: number): number {
      if (value === undefined) return fallback;
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) throw refuse(option, `must be a whole number above 0, got ${JSON.stringify(value) ?? typeof value}`);
      return value;
    },
    origin: (option: string, value: string): string => originOf(names(option), value),
    /**
     * A binding that answers `limit()`: given the wrong object (the whole `env`, another binding),
     * the tunnel would otherwise fail on every call, which refuses every request.
     */
    limiter(option: string, value: unknown, required = "is required: a Workers Rate Limiting binding, or \"off\" to run without any limit on purpose"): Limiter {
      if (value === undefined || value === null) throw refuse(option, required);
      return binding<Limiter>(option, value, ["limit"], "a Workers Rate Limiting binding", "[[ratelimits]]");
    },
    binding,
  };
}
