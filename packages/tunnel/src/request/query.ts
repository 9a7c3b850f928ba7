/** The tunnel's query, `?o=<org>&p=<project>[&r=<region>]`, after its shape was checked. */
export interface TunnelQuery {
  org: string | undefined;
  project: string;
  region: string | undefined;
}

const DIGITS = /^\d{1,20}$/;
const REGION = /^[a-z]{2}$/;
const KNOWN_KEYS = new Set(["o", "p", "r"]);

/**
 * Only the shape is checked here; whether `o` must be present depends on the envelope's DSN
 * (SaaS or self-hosted), which the DSN policy decides. Unknown or repeated keys are refused,
 * so nothing in the URL can mean something the tunnel ignores.
 */
export function parseTunnelQuery(search: URLSearchParams): TunnelQuery | undefined {
  const seen = new Set<string>();
  for (const key of search.keys()) {
    if (!KNOWN_KEYS.has(key) || seen.has(key)) return undefined;
    seen.add(key);
  }
  const org = search.get("o") ?? undefined;
  const project = search.get("p") ?? "";
  const region = search.get("r") ?? undefined;
  if (!DIGITS.test(project)) return undefined;
  if (org !== undefined && !DIGITS.test(org)) return undefined;
  if (region !== undefined && !REGION.test(region)) return undefined;
  return { org, project, region };
}
