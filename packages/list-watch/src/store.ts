import type { StoredList } from "./list-read.ts";
import { SITE_RULES_VERSION } from "./site-rules.ts";

/**
 * Where a list's last read is kept between runs, so that the next asks only whether it changed.
 * A store that fails is a list read again in full, never a failed check.
 */
export interface ListStore {
  get(host: string, url: string): Promise<StoredList | undefined>;
  put(host: string, url: string, list: StoredList): Promise<void>;
}

/** The isolate's memory: enough for tests and for runs that land on the same isolate. */
export function memoryListStore(): ListStore {
  const lists = new Map<string, StoredList>();
  return {
    get: async (host, url) => lists.get(`${SITE_RULES_VERSION} ${host} ${url}`),
    put: async (host, url, list) => void lists.set(`${SITE_RULES_VERSION} ${host} ${url}`, list),
  };
}

/**
 * Under this prefix in the bucket, one object per host and list: some tens of kilobytes each.
 * Lines kept by an earlier version of the site's rules stay under its prefix, never read again:
 * one set per upgrade that changed them.
 */
const PREFIX = `tunnel-watch/v${SITE_RULES_VERSION}/`;

/** Validators longer than this are not kept, and a version is cut to it: R2's custom metadata is 2 KB in all. */
const MAX_VALIDATOR = 512;

/** An R2 bucket (the spool's will do): the kept lines as the body, the validators as metadata. */
export function r2ListStore(bucket: R2Bucket): ListStore {
  const keyOf = async (host: string, url: string) => {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${host}\n${url}`)));
    return PREFIX + [...digest].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  };
  return {
    async get(host, url) {
      const object = await bucket.get(await keyOf(host, url));
      if (!object) return undefined;
      const { etag = "", lastModified = "", version = "unversioned" } = object.customMetadata ?? {};
      return { etag: etag || null, lastModified: lastModified || null, version, rules: await object.text() };
    },
    async put(host, url, list) {
      const validator = (value: string | null) => (value && value.length <= MAX_VALIDATOR ? value : "");
      await bucket.put(await keyOf(host, url), list.rules, {
        customMetadata: { etag: validator(list.etag), lastModified: validator(list.lastModified), version: list.version.slice(0, MAX_VALIDATOR) },
      });
    },
  };
}
