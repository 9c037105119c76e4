// API keys: 256 random bits behind a recognizable prefix. Only the SHA-256 is stored; the
// key's id is derived from that hash, so finding a key is one table lookup.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const KEY_PREFIX = 'sk-aihub-';

export function generateApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** (crypto.hash, one call: a third of createHash's cost on every authenticated request.) */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

export function keyIdFromHash(hash: string): string {
  return `key_${hash.slice(0, 24)}`;
}

/** What may be shown of a key after creation: enough to recognize it, useless to an attacker. */
export function displayPrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 4);
}

/** Compares a presented secret with a stored SHA-256 in constant time. */
export function matchesHash(secret: string, hash_hex: string): boolean {
  const presented = hash('sha256', secret, 'buffer');
  const stored = Buffer.from(hash_hex, 'hex');
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
