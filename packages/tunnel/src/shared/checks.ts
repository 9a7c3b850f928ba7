import { ConfigError, exactOrigin } from "./variables.ts";

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
 * The name a refusal of `option` gives: its variable when an adapter read it from `env`, else the
 * option's own, under `prefix` (`spool.`) for the options of a capability.
 */
export function settingNames(options: object, prefix = ""): SettingNames {
  const names = (options as NamedOptions)[READ_FROM];
  return (option) => names?.[option] ?? `${prefix}${option}`;
}

/** The checks of one typed value each, refusing with the name `names` gives its option. */
export function checks(names: SettingNames) {
  const refuse = (option: string, problem: string) => new ConfigError(names(option), problem);
  const text = (option: string, value: unknown): string => {
    if (typeof value !== "string") throw refuse(option, `must be text, got ${JSON.stringify(value) ?? typeof value}`);
    return value;
  };
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
    text,
    list(option: string, value: readonly unknown[] | undefined): string[] {
      if (value === undefined) return [];
      if (!Array.isArray(value)) throw refuse(option, `must be a list of text, got ${JSON.stringify(value) ?? typeof value}`);
      return value.map((item) => text(option, item));
    },
    flag(option: string, value: unknown, fallback: boolean): boolean {
      if (value === undefined) return fallback;
      if (typeof value !== "boolean") throw refuse(option, `must be true or false, got ${JSON.stringify(value) ?? typeof value}`);
      return value;
    },
    positiveInteger(option: string, value: unknown, fallback: number): number {
      if (value === undefined) return fallback;
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) throw refuse(option, `must be a whole number above 0, got ${JSON.stringify(value) ?? typeof value}`);
      return value;
    },
    origin(option: string, value: unknown): string {
      const given = text(option, value);
      const origin = exactOrigin(given);
      if (origin === undefined) throw refuse(option, `must be an origin such as https://example.com, got "${given}"`);
      return origin;
    },
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

