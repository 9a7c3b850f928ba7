import type { TunnelQuery } from "../request/query.ts";
import { parseDsn, type Dsn } from "./dsn.ts";

/** Sentry SaaS ingest hosts: `o<org>.ingest[.<region>].sentry.io`. */
const SAAS_INGEST_HOST = /^o(\d+)\.ingest(?:\.([a-z]{2}))?\.sentry\.io$/;

/** Which project a DSN reports to, as the tunnel's query names it: `o` and `r` exist for SaaS only. */
export function projectOf(dsn: Dsn): TunnelQuery {
  const saas = SAAS_INGEST_HOST.exec(dsn.host);
  return { org: saas?.[1], region: saas?.[2], project: dsn.projectId };
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
function ingestOriginOf(dsn: Dsn, upstreamOrigin: string | undefined): string {
  return upstreamOrigin ?? `${dsn.protocol}://${dsn.host}${dsn.port ? `:${dsn.port}` : ""}`;
}

/** Where browsers' Content-Security-Policy reports go: the app's own project, chosen by the Worker. */
export interface OwnProject {
  dsn: Dsn;
  environment: string;
  /** The release the reports are filed under; none when the app does not say. */
  release: string | undefined;
}

/**
 * Sentry's security endpoint for the app's own DSN. It authenticates by `sentry_key` in the query,
 * as Sentry's documentation gives it; environment and release are the Worker's own.
 * `upstreamOrigin` (development and tests) swaps scheme, host and port only.
 */
export function securityEndpointFor({ dsn, environment, release }: OwnProject, upstreamOrigin: string | undefined): string {
  const origin = ingestOriginOf(dsn, upstreamOrigin);
  const query = new URLSearchParams({ sentry_key: dsn.publicKey, sentry_environment: environment });
  if (release !== undefined) query.set("sentry_release", release);
  return `${origin}/${dsn.path}api/${dsn.projectId}/security/?${query}`;
}

/**
 * What a host that reports with `dsn` itself needs of it: its public key, its project, and its
 * envelope endpoint (at `upstreamOrigin` in development and tests); `undefined` for text that is
 * no DSN.
 */
export function dsnFacts(dsn: string, upstreamOrigin?: string): { publicKey: string; project: TunnelQuery; envelopeUrl: string } | undefined {
  const parsed = parseDsn(dsn);
  return parsed && { publicKey: parsed.publicKey, project: projectOf(parsed), envelopeUrl: upstreamUrlFor(parsed, upstreamOrigin) };
}
