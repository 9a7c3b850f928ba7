/**
 * Reading a Worker's variables by one set of rules: trimmed, empty meaning "the default", lists
 * comma-separated. Anything else is refused with a {@link ConfigError} that names the variable, so
 * that a bad setting stops the Worker when it starts rather than a request later.
 */
export class ConfigError extends Error {
  readonly variable: string;

  constructor(variable: string, problem: string) {
    super(`${variable} ${problem}`);
    this.name = "ConfigError";
    this.variable = variable;
  }
}

/** The readers of one environment's variables, each by name. */
export interface VariableReader<Name extends string> {
  /** Trimmed; `""` when unset. */
  text(name: Name): string;
  /** Comma-separated, each item trimmed, empty ones left out. */
  list(name: Name): string[];
  /** A list of `http(s)://host[:port]` origins with nothing after them. */
  origins(name: Name): string[];
  /** One such origin, or `undefined` when unset. */
  optionalOrigin(name: Name): string | undefined;
  onOrOff<Fallback extends boolean | undefined>(name: Name, fallback: Fallback): boolean | Fallback;
  /** A number from 0 to 1. */
  fraction(name: Name, fallback: number): number;
}

/**
 * What a variable can be as the Worker gets it: text from `.dev.vars`, `.env`, `--var` or a quoted
 * `[vars]` value; a number or `true`/`false` from an unquoted one, which wrangler passes on as JSON.
 * A TOML table or array is JSON too, and no setting of ours.
 */
export type VariableValue = string | number | boolean;

/**
 * A Worker's variables read by one set of rules, for a host's own settings as for the tunnel's:
 * trimmed, empty meaning "the default", lists comma-separated, `on`/`off` (or `true`/`false`) for
 * a switch, origins with nothing after them. What does not read so is a {@link ConfigError}
 * naming the variable.
 */
export function variableReader<Name extends string>(env: Partial<Record<Name, unknown>>): VariableReader<Name> {
  const text = (name: Name) => {
    const value = env[name];
    if (value === undefined || value === null) return "";
    if (typeof value === "string") return value.trim();
    if ((typeof value === "number" && Number.isFinite(value)) || typeof value === "boolean") return String(value);
    throw new ConfigError(name, `must be text, a number, or true or false, got ${JSON.stringify(value)}`);
  };
  const list = (name: Name) =>
    text(name)
      .split(",")
      .map((item) => item.trim())
      .filter((item) => item !== "");
  return {
    text,
    list,
    origins: (name) => list(name).map((value) => originOf(name, value)),
    optionalOrigin(name) {
      const value = text(name);
      return value === "" ? undefined : originOf(name, value);
    },
    onOrOff(name, fallback) {
      const value = text(name).toLowerCase();
      if (value === "") return fallback;
      // TOML's `true` and `false` arrive as booleans; the same words in `.dev.vars` as text.
      if (value === "on" || value === "true") return true;
      if (value === "off" || value === "false") return false;
      throw new ConfigError(name, `must be on or off (or empty for the default), got "${value}"`);
    },
    fraction(name, fallback) {
      const value = text(name);
      if (value === "") return fallback;
      if (!/^\d*\.?\d+$/.test(value) || Number(value) > 1) throw new ConfigError(name, `must be a number from 0 to 1, got "${value}"`);
      return Number(value);
    },
  };
}

/** How a variable's text becomes its option: text, a comma-separated list, a whole number, or on/off. */
export type VariableRead = "text" | "list" | "number" | "onOrOff";

/** The variables a table of options reads (option → variable and how it reads), each as a Worker may give it. */
export type VariablesOf<Table extends Readonly<Record<string, readonly [string, VariableRead]>>> = { [Option in keyof Table as Table[Option][0]]?: VariableValue };

/** `value` as an origin, or a {@link ConfigError} naming `variable`: the one sentence for every origin setting. */
export function originOf(variable: string, value: string): string {
  const origin = exactOrigin(value);
  if (origin === undefined) throw new ConfigError(variable, `must be an origin such as https://example.com, got "${value}"`);
  return origin;
}

/**
 * `value` as an `http(s)://host[:port]` origin, when it is one with nothing after it (a path would
 * be silently dropped otherwise); `undefined` when it is not.
 */
function exactOrigin(value: string): string | undefined {
  const url = URL.parse(value);
  return url && /^https?:$/.test(url.protocol) && value.replace(/\/$/, "") === url.origin ? url.origin : undefined;
}
