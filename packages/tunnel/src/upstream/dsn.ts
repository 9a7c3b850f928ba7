/**
 * Sentry DSNs, read by the tunnel's own rules. `@sentry/core`'s `dsnFromString` is not used on
 * purpose: it `console.error`s any text it cannot parse, and an envelope's DSN is written by
 * whoever sends the request, so it would let a client write into the Worker's log.
 */
export interface Dsn {
  protocol: "http" | "https";
  publicKey: string;
  /** Host name or bracketed IPv6 address, as written. */
  host: string;
  /** `""` when the DSN names none. */
  port: string;
  /** What stands between the host and the project id, with its trailing slash, or `""`. */
  path: string;
  projectId: string;
  /**
   * The DSN as the SDK writes it into an envelope header (`dsnToString`): as configured, less the
   * legacy secret, which the SDK never sends. An envelope's DSN must equal this, byte for byte.
   */
  text: string;
}

/** Longer than any real DSN; a longer string is refused before any pattern is tried. */
const MAX_DSN_LENGTH = 2048;

/**
 * `scheme://key[:secret]@host[:port]/[path/]project`, anchored at both ends, with a project id of
 * digits only: `…/2abc`, `…/2?x=1` and `…/2#x` are not DSNs (the SDK's parser reads them as `…/2`).
 */
const DSN_PATTERN =
  /^(https?):\/\/(\w+)(?::\w*)?@([\w.-]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?\/((?:[\w.~-]+\/)*)(\d{1,20})$/;

export function parseDsn(input: string): Dsn | undefined {
  if (input.length > MAX_DSN_LENGTH) return undefined;
  const match = DSN_PATTERN.exec(input);
  if (!match) return undefined;
  // Groups 1, 2, 3 and 6 always take part in a match; 4 and 5 are optional.
  const [, protocol, publicKey, host, port = "", path = "", projectId] = match as RegExpExecArray & string[];
  const dsn = { protocol: protocol as Dsn["protocol"], publicKey: publicKey!, host: host!, port, path, projectId: projectId! };
  return { ...dsn, text: `${dsn.protocol}://${dsn.publicKey}@${dsn.host}${port ? `:${port}` : ""}/${path}${dsn.projectId}` };
}

/**
 * The DSN's text with its host in lower case: host names are compared without regard to case,
 * so an envelope whose DSN differs from an allowed one only there is the same project's.
 */
export function hostFolded(dsn: Dsn): string {
  return dsn.text.replace(`@${dsn.host}`, `@${dsn.host.toLowerCase()}`);
}
