/** Longer than any IP address; anything longer is cut, so a key is bounded whatever the header says. */
const MAX_KEY_LENGTH = 64;

/**
 * The rate limiter's key for a client: its address as Cloudflare saw it (`CF-Connecting-IP`). An
 * IPv6 address is cut to its /64, the block a single subscriber is usually given; keyed whole, one
 * host could rotate through 2^64 addresses, each with a fresh limit.
 */
export function clientKey(ip: string | null): string {
  if (!ip) return "unknown";
  // The URL parser writes an IPv6 address one way: lowercase, no leading zeros, at most one `::`.
  const host = /^[\d.:a-f]*:[\d.:a-f]*$/i.test(ip) ? URL.parse(`http://[${ip}]`)?.hostname.slice(1, -1) : undefined;
  if (host === undefined) return ip.slice(0, MAX_KEY_LENGTH);
  const [head = [], tail] = host.split("::").map((half) => (half ? half.split(":") : []));
  const hextets = tail ? [...head, ...Array<string>(8 - head.length - tail.length).fill("0"), ...tail] : head;
  // An IPv4 address written as IPv6 (::ffff:a.b.c.d) is that IPv4 client.
  if (hextets.slice(0, 6).join(":") === "0:0:0:0:0:ffff") {
    const [high = 0, low = 0] = hextets.slice(6).map((hextet) => Number.parseInt(hextet, 16));
    return [high >> 8, high & 255, low >> 8, low & 255].join(".");
  }
  return `${hextets.slice(0, 4).join(":")}::/64`;
}
