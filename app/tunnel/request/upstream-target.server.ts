import type { Dsn } from "../shared/dsn.server";

/** Sentry SaaS ingest hosts: `o<org>.ingest[.<region>].sentry.io`. */
const SAAS_INGEST_HOST = /^o(\d+)\.ingest(?:\.([a-z]{2}))?\.sentry\.io$/;

/** Which project a DSN reports to, as the tunnel's query names it: `o` and `r` exist for SaaS only. */
export interface ProjectIdentity {
  org: string | undefined;
  region: string | undefined;
  projectId: string;
}

export function projectOf(dsn: Dsn): ProjectIdentity {
  const saas = SAAS_INGEST_HOST.exec(dsn.host);
  return { org: saas?.[1], region: saas?.[2], projectId: dsn.projectId };
}

/**
 * The envelope endpoint for an allowed DSN, built from that DSN alone.
 *
 * The SDK's own endpoint carries `sentry_key` in the query; the tunnel leaves it out, because the
 * envelope header already carries the DSN. SaaS gets `hsts=0` so that Sentry does not send an HSTS
 * header for us to strip. `upstreamOrigin` (development and tests) swaps scheme, host and port only.
 */
export function upstreamUrlFor(dsn: Dsn, upstreamOrigin?: string): string {
  const origin = ingestOriginOf(dsn, upstreamOrigin);
  const saas = projectOf(dsn).org !== undefined;
  return `${origin}/${dsn.path}api/${dsn.projectId}/envelope/${saas ? "?hsts=0" : ""}`;
}

/** Where a DSN's ingest answers: its scheme, host and port, or `upstreamOrigin` in development and tests. */
export function ingestOriginOf(dsn: Dsn, upstreamOrigin: string | undefined): string {
  return upstreamOrigin ?? `${dsn.protocol}://${dsn.host}${dsn.port ? `:${dsn.port}` : ""}`;
}
