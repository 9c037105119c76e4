// IP whitelists: single addresses and CIDR ranges, IPv4 and IPv6, matched with Node's own
// BlockList (which also matches IPv4-mapped IPv6 addresses such as ::ffff:10.0.0.1). An
// account's whitelist binds every request its keys make, on /v1 as on /api; the client's
// address follows the `trust_proxy` setting the same way on both: main.ts compiles it once
// (compileTrustProxy, with proxy-addr, the module Express itself uses for req.ip) and hands
// the one rule to Express and to the /v1 lane.
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import proxyaddr from 'proxy-addr';
import type { Account } from '../store/state.js';
import { ApiError } from '../http/errors.js';

export const MAX_WHITELIST_ENTRIES = 100;

/** The shortest prefixes a whitelist entry may have unless forced (a /0 lets everyone in). */
export interface PrefixFloor {
  ipv4: number;
  ipv6: number;
}

export const DEFAULT_PREFIX_FLOOR: PrefixFloor = { ipv4: 8, ipv6: 32 };

/** An address as a number of 32 or 128 bits (IPv6 through Node's URL parser, which expands every form). */
function addressBits(address: string, version: 4 | 6): bigint {
  if (version === 4) return address.split('.').reduce((n, octet) => (n << 8n) | BigInt(octet), 0n);
  const groups = new URL(`http://[${address}]`).hostname.slice(1, -1);
  const [head = '', tail] = groups.split('::') as [string, string | undefined];
  const part = (text: string) => (text ? text.split(':') : []);
  const words =
    tail === undefined
      ? part(head)
      : [
          ...part(head),
          ...Array(8 - part(head).length - part(tail).length).fill('0'),
          ...part(tail),
        ];
  return words.reduce((n, word) => (n << 16n) | BigInt(parseInt(word, 16)), 0n);
}

function addressText(bits: bigint, version: 4 | 6): string {
  if (version === 4)
    return [24n, 16n, 8n, 0n].map((shift) => String((bits >> shift) & 0xffn)).join('.');
  const words = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n)
    words.push(((bits >> shift) & 0xffffn).toString(16));
  return new URL(`http://[${words.join(':')}]`).hostname.slice(1, -1); // compressed, lower case
}

/**
 * Canonical text of one whitelist entry, or an error message: an address (IPv4-mapped IPv6
 * written as the IPv4 address it is), or a network in CIDR form whose address is the
 * network's own (`10.9.9.9/1` is refused, naming `0.0.0.0/1`: host bits set say the entry is
 * not what its writer meant) with a prefix no shorter than `floor` unless `force`.
 */
export function parseWhitelistEntry(
  raw: string,
  options: { floor?: PrefixFloor; force?: boolean } = {},
): { entry: string } | { error: string } {
  const text = raw.trim().toLowerCase();
  const slash = text.indexOf('/');
  let address = slash === -1 ? text : text.slice(0, slash);
  let version = (address.includes('%') ? 0 : isIP(address)) as 0 | 4 | 6; // no zone ids (fe80::1%eth0)
  if (version === 0) return { error: `"${raw}" is not an IPv4 or IPv6 address or CIDR range` };
  let max = version === 4 ? 32 : 128;
  const prefix_text = slash === -1 ? String(max) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefix_text) || Number(prefix_text) > max)
    return { error: `"${raw}" has a prefix length outside 0–${max}` };
  let prefix = Number(prefix_text);
  let bits = addressBits(address, version);
  if (version === 6 && bits >> 32n === 0xffffn && prefix >= 96) {
    // ::ffff:a.b.c.d/n is the IPv4 network a.b.c.d/(n - 96): written as such.
    version = 4;
    max = 32;
    prefix -= 96;
    bits &= 0xffffffffn;
  }
  const host_mask = (1n << BigInt(max - prefix)) - 1n;
  const network = bits & ~host_mask;
  address = addressText(bits, version);
  if (network !== bits) {
    const net = `${addressText(network, version)}/${prefix}`;
    return {
      error: `"${raw}" has host bits set: as a range it means ${net}; write ${net} for that range, or ${address} for the one address`,
    };
  }
  const floor = (options.floor ?? DEFAULT_PREFIX_FLOOR)[version === 4 ? 'ipv4' : 'ipv6'];
  if (prefix < floor && !options.force)
    return {
      error: `"${raw}" allows ${prefix === 0 ? 'every address' : `a /${prefix} range`}, wider than /${floor}; name narrower ranges, or send force: true to allow it anyway`,
    };
  return { entry: prefix === max ? address : `${address}/${prefix}` };
}

/** A matcher for a validated whitelist; an empty list allows everyone. */
export function whitelistMatcher(
  entries: readonly string[],
): (address: string | undefined) => boolean {
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

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.1) as the IPv4 address it is. */
export function plainAddress(address: string | undefined): string | undefined {
  if (address?.startsWith('::ffff:') && /^\d+\.\d+\.\d+\.\d+$/.test(address.slice(7)))
    return address.slice(7);
  return address;
}

export type TrustProxy = (address: string, hop: number) => boolean;

/**
 * The config's `trust_proxy` as the rule proxy-addr applies: `true` trusts every hop, a
 * number that many hops, a string (or `false`, none) the comma-separated addresses, CIDR
 * ranges and proxy-addr's names (`loopback`, `uniquelocal`). The values Express's own
 * `trust proxy` setting takes, with the same meaning; throws TypeError on a bad address.
 */
export function compileTrustProxy(setting: boolean | number | string): TrustProxy {
  if (setting === true) return () => true;
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return proxyaddr.compile(
    setting === false ? [] : setting.split(',').map((entry) => entry.trim()),
  );
}

/** The client's address under a compiled trust-proxy rule: what Express's req.ip is, for a request outside Express. */
export function clientAddressOf(req: IncomingMessage, trust: TrustProxy): string | undefined {
  if (!req.socket.remoteAddress) return undefined;
  return plainAddress(proxyaddr(req, trust));
}

/** Throws 403 `ip_not_allowed` when the account has a whitelist and `address` is not on it. */
export function assertAddressAllowed(account: Account, address: string | undefined): void {
  if (!isAllowed(account.ip_whitelist, address)) {
    throw new ApiError(
      403,
      'ip_not_allowed',
      `requests from ${address ?? 'this address'} are not allowed for this account (IP whitelist)`,
      null,
      'permission_error',
    );
  }
}
