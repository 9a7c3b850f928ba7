import { hostFolded, parseDsn, type Dsn } from "./dsn.ts";
import type { TunnelQuery } from "../request/query.ts";
import { projectOf, upstreamUrlFor } from "./ingest.ts";

/** A DSN the tunnel forwards for, with its upstream URL worked out once, when the tunnel is built. */
interface AllowedDsn {
  /** The DSN in its canonical form ({@link Dsn.text}), whatever spelling an envelope used. */
  dsn: string;
  /** Its project, as the tunnel's query and the log line name it. */
  query: TunnelQuery;
  upstreamUrl: string;
}

/** Keyed by the DSN's header text ({@link Dsn.text}), and by that text with the host in lower case ({@link hostFolded}). */
export type DsnAllowList = ReadonlyMap<string, AllowedDsn>;

export function compileAllowList(dsns: readonly Dsn[], upstreamOrigin: string | undefined): DsnAllowList {
  const allowList = new Map<string, AllowedDsn>();
  for (const dsn of dsns) {
    const allowed = { query: projectOf(dsn), dsn: dsn.text, upstreamUrl: upstreamUrlFor(dsn, upstreamOrigin) };
    allowList.set(hostFolded(dsn), allowed).set(dsn.text, allowed);
  }
  return allowList;
}

type DsnVerdict = { ok: true; allowed: AllowedDsn } | { ok: false; reason: "dsn_invalid" | "dsn_not_allowed" };

/**
 * Whether an envelope may pass: its DSN must be an allowed DSN, compared in one canonical form,
 * the DSN as the SDK writes it (`dsnToString`), which leaves out the legacy `:secret`, with the
 * host in lower case, as host names are compared. So an allow-listed DSN matches whether it was
 * configured or sent with its secret or without, and whatever the case of its host; anything else
 * (another case of the key, a port written out, a path, text after the project id) does not. The DSN is
 * the gate, as for Relay and `@sentry/core`'s `handleTunnelRequest`.
 */
// Decision 011.
export function checkEnvelopeDsn(dsnText: string, allowList: DsnAllowList): DsnVerdict {
  // The SDKs' own spelling is the canonical one: most envelopes need no parsing at all.
  const exact = allowList.get(dsnText);
  if (exact) return { ok: true, allowed: exact };
  const parsed = parseDsn(dsnText);
  if (!parsed) return { ok: false, reason: "dsn_invalid" };
  // Every allowed DSN is also keyed by its host-folded text, which its other spellings share.
  const canonical = allowList.get(hostFolded(parsed));
  return canonical ? { ok: true, allowed: canonical } : { ok: false, reason: "dsn_not_allowed" };
}

/**
 * The query's projects, from the allow-list: the query is a routing hint and a cheap refusal
 * before the body is read, so it must name one of them, but not necessarily the envelope's own:
 * a micro-frontend's multiplexed transport sends every project's envelopes to the app's one
 * tunnel URL.
 */
export function allowedQueries(allowList: DsnAllowList): (query: TunnelQuery) => boolean {
  const key = (org: string | undefined, region: string | undefined, project: string) => `${org ?? ""}/${region ?? ""}/${project}`;
  const known = new Set([...allowList.values()].map(({ query }) => key(query.org, query.region, query.project)));
  return (query) => known.has(key(query.org, query.region, query.project));
}
