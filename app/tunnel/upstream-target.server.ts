import { getEnvelopeEndpointWithUrlEncodedAuth, type DsnComponents } from "@sentry/core";

/** Sentry SaaS ingest hosts: `o<org>.ingest[.<region>].sentry.io`. */
const SAAS_INGEST_HOST = /^o(\d+)\.ingest(?:\.([a-z]{2}))?\.sentry\.io$/;

export interface SaasIngest {
  org: string;
  region: string | undefined;
}

export function saasIngestOf(host: string): SaasIngest | undefined {
  const match = SAAS_INGEST_HOST.exec(host);
  return match ? { org: match[1]!, region: match[2] } : undefined;
}

/**
 * The envelope endpoint for an allowed DSN, built from that DSN alone.
 *
 * The SDK's own endpoint carries `sentry_key` in the query; the tunnel leaves it out, because the
 * envelope header already carries the DSN. SaaS gets `hsts=0` so that Sentry does not send an HSTS
 * header for us to strip. `upstreamOrigin` (development and tests) swaps scheme, host and port only.
 */
export function upstreamUrlFor(dsn: DsnComponents, upstreamOrigin?: string): string {
  const url = new URL(getEnvelopeEndpointWithUrlEncodedAuth(dsn));
  url.search = saasIngestOf(dsn.host) ? "?hsts=0" : "";
  if (upstreamOrigin) {
    const target = new URL(upstreamOrigin);
    url.protocol = target.protocol;
    url.host = target.host;
  }
  return url.href;
}
