// `wrangler deploy`'s arguments as wrangler reads them, for `npm run deploy`'s check of the
// variables the deploy would give the Worker.

/** The value of an option: `--name value` or `--name=value`, the last one winning. */
export function optionOf(passed: readonly string[], names: readonly string[]): string | undefined {
  let value: string | undefined;
  for (let index = 0; index < passed.length; index += 1) {
    const [name, inline] = passed[index]!.split(/=(.*)/s);
    if (names.includes(name!)) value = inline ?? passed[index + 1];
  }
  return value;
}

/**
 * `--var NAME:VALUE`, as wrangler takes it: an array option, so one `--var` takes every value up
 * to the next option (`--var A:1 B:2`), and `--var=A:1` takes one.
 */
export function passedVars(passed: readonly string[]): Record<string, string> {
  const vars: Record<string, string> = {};
  const add = (value: string) => {
    const colon = value.indexOf(":");
    if (colon > 0) vars[value.slice(0, colon)] = value.slice(colon + 1);
  };
  let taking = false;
  for (const arg of passed) {
    if (arg.startsWith("--var=")) add(arg.slice("--var=".length));
    if (arg.startsWith("-")) taking = arg === "--var";
    else if (taking) add(arg);
  }
  return vars;
}
