// IP whitelists: single addresses and CIDR ranges, IPv4 and IPv6, matched with Node's own
// BlockList (which also matches IPv4-mapped IPv6 addresses such as ::ffff:10.0.0.1).
import { BlockList, isIP } from 'node:net';

export const MAX_WHITELIST_ENTRIES = 100;

/** Canonical text of one whitelist entry, or an error message. */
export function parseWhitelistEntry(raw: string): { entry: string } | { error: string } {
  const text = raw.trim().toLowerCase();
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const version = isIP(address);
  if (version === 0) return { error: `"${raw}" is not an IPv4 or IPv6 address or CIDR range` };
  if (slash === -1) return { entry: address };
  const prefix_text = text.slice(slash + 1);
  const max = version === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix_text) || Number(prefix_text) > max) return { error: `"${raw}" has a prefix length outside 0–${max}` };
  return { entry: `${address}/${Number(prefix_text)}` };
}

/** A matcher for a validated whitelist; an empty list allows everyone. */
export function whitelistMatcher(entries: readonly string[]): (address: string | undefined) => boolean {
  if (entries.length === 0) return () => true;
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/') as [string, string | undefined];
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return (raw) => {
    if (!raw) return false;
    const address = raw.startsWith('::ffff:') && isIP(raw.slice(7)) === 4 ? raw.slice(7) : raw;
    const version = isIP(address);
    if (version === 0) return false;
    return list.check(address, version === 4 ? 'ipv4' : 'ipv6');
  };
}

const cache = new Map<string, (address: string | undefined) => boolean>();
const CACHE_LIMIT = 1_000;

/** Memoized by the list's content: accounts' whitelists change rarely and are checked on every call. */
export function isAllowed(entries: readonly string[], address: string | undefined): boolean {
  if (entries.length === 0) return true;
  const cache_key = entries.join(',');
  let matcher = cache.get(cache_key);
  if (!matcher) {
    if (cache.size >= CACHE_LIMIT) cache.clear();
    matcher = whitelistMatcher(entries);
    cache.set(cache_key, matcher);
  }
  return matcher(address);
}
