import { dsnFromString, dsnToString, type DsnComponents } from "@sentry/core";

import type { TunnelQuery } from "./tunnel-query.server";
import { saasIngestOf, upstreamUrlFor } from "./upstream-target.server";

/** A DSN the tunnel forwards for, with everything a request needs precomputed at start-up. */
export interface AllowedDsn {
  /** Canonical DSN string without the secret: what an envelope's DSN must equal. */
  key: string;
  /** SaaS only; self-hosted DSNs have neither. */
  org: string | undefined;
  region: string | undefined;
  projectId: string;
  upstreamUrl: string;
}

export function allowedDsnFrom(dsn: DsnComponents, upstreamOrigin?: string): AllowedDsn {
  const saas = saasIngestOf(dsn.host);
  return {
    key: dsnToString(dsn),
    org: saas?.org,
    region: saas?.region,
    projectId: dsn.projectId,
    upstreamUrl: upstreamUrlFor(dsn, upstreamOrigin),
  };
}

export type DsnVerdict =
  | { ok: true; allowed: AllowedDsn }
  | { ok: false; reason: "dsn_invalid" | "dsn_not_allowed" | "query_mismatch" };

/**
 * Whether an envelope may pass: its DSN must equal an allowed one (key, host, port, path and
 * project), and the query must name that DSN's org, region and project.
 */
export function checkEnvelopeDsn(
  dsnText: string,
  query: TunnelQuery,
  allowedDsns: ReadonlyMap<string, AllowedDsn>,
): DsnVerdict {
  // The regex inside dsnFromString would accept these too, but an allow-listed DSN never has them.
  if (dsnText.length > 2048 || !/^https?:\/\//.test(dsnText)) return { ok: false, reason: "dsn_invalid" };
  const dsn = dsnFromString(dsnText);
  if (!dsn?.publicKey || !dsn.projectId) return { ok: false, reason: "dsn_invalid" };

  const allowed = allowedDsns.get(dsnToString(dsn));
  if (!allowed) return { ok: false, reason: "dsn_not_allowed" };

  const agrees = query.org === allowed.org && query.region === allowed.region && query.project === allowed.projectId;
  return agrees ? { ok: true, allowed } : { ok: false, reason: "query_mismatch" };
}
