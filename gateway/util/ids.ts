import { randomFillSync } from 'node:crypto';

// Random bytes are drawn from the CSPRNG 4 KiB at a time and each byte is used once: a
// randomBytes call per id costs a chat request measurably (several ids each; the figure is
// in docs/chat-api.md#benchmark).
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;

/** `bytes` fresh random bytes (at most 256) as lower-case hex. */
export function randomHex(bytes: number): string {
  if (bytes > 256) throw new RangeError('randomHex takes at most 256 bytes');
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}

/** A prefixed random id such as `acc_3f9a…`; 96 bits, so collisions are not a concern. */
export function newId(prefix: string): string {
  return `${prefix}_${randomHex(12)}`;
}
