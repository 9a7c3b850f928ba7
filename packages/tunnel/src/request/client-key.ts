/** Longer than any IP address; anything longer is cut, so a key is bounded whatever the header says. */
const MAX_KEY_LENGTH = 64;

/**
 * The rate limiter's key for a client: its address as Cloudflare saw it (`CF-Connecting-IP`). An
 * IPv6 address is cut to its /64, the block a single subscriber is usually given; keyed whole, one
 * host could rotate through 2^64 addresses, each with a fresh limit.
 */
export function clientKey(ip: string | null): string {
  if (!ip) return "unknown";
  if (!ip.includes(":")) return ip.slice(0, MAX_KEY_LENGTH);
  const hextets = expandIpv6(ip.toLowerCase());
  if (!hextets) return ip.slice(0, MAX_KEY_LENGTH);
  // An IPv4 address written as IPv6 (::ffff:a.b.c.d) is that IPv4 client.
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(ip.toLowerCase());
  if (mapped) return mapped[1]!;
  return `${hextets.slice(0, 4).join(":")}::/64`;
}

/** The eight hextets of an IPv6 address, without leading zeros, or `undefined` if it is not one. */
function expandIpv6(ip: string): string[] | undefined {
  const halves = ip.split("::");
  if (halves.length > 2) return undefined;
  const groups = (half: string | undefined) => (half ? half.split(":") : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  // An embedded IPv4 address at the end takes the place of two hextets.
  const last = tail.length > 0 ? tail : head;
  if (last.length > 0 && last[last.length - 1]!.includes(".")) last.splice(-1, 1, "0", "0");
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 1 ? 0 : missing).fill("0"), ...tail];
  if (!all.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined;
  return all.map((group) => group.replace(/^0+(?=.)/, ""));
}
