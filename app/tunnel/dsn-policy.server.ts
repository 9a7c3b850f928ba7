import { parseDsn, type Dsn } from "./dsn.server";
import type { TunnelQuery } from "./tunnel-query.server";
import { projectOf, upstreamUrlFor, type ProjectIdentity } from "./upstream-target.server";

/** A DSN the tunnel forwards for, with its upstream URL worked out once, when the tunnel is built. */
interface AllowedDsn extends ProjectIdentity {
  upstreamUrl: string;
}

/** Keyed by the DSN's header text ({@link Dsn.text}). */
type DsnAllowList = ReadonlyMap<string, AllowedDsn>;

export function compileAllowList(dsns: readonly Dsn[], upstreamOrigin: string | undefined): DsnAllowList {
  return new Map(dsns.map((dsn) => [dsn.text, { ...projectOf(dsn), upstreamUrl: upstreamUrlFor(dsn, upstreamOrigin) }]));
}

type DsnVerdict =
  | { ok: true; allowed: AllowedDsn }
  | { ok: false; reason: "dsn_invalid" | "dsn_not_allowed" | "query_mismatch" };

/**
 * Whether an envelope may pass: its DSN, as written, must be an allowed DSN's header text, and the
 * query must name that DSN's org, region and project. No normalisation: the SDK writes the DSN it
 * was given, so any other spelling of it was written by someone else.
 */
export function checkEnvelopeDsn(dsnText: string, query: TunnelQuery, allowList: DsnAllowList): DsnVerdict {
  const allowed = allowList.get(dsnText);
  // Parsed only to tell the client which of the two mistakes it made.
  if (!allowed) return { ok: false, reason: parseDsn(dsnText) ? "dsn_not_allowed" : "dsn_invalid" };
  const agrees = query.org === allowed.org && query.region === allowed.region && query.project === allowed.projectId;
  return agrees ? { ok: true, allowed } : { ok: false, reason: "query_mismatch" };
}
