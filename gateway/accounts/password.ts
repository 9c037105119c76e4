// Password hashing with scrypt (node:crypto, memory-hard). The stored string names its
// parameters, so they can be raised later and old hashes still verify:
//   scrypt$<N>$<r>$<p>$<salt base64url>$<hash base64url>
// One module for every password in AIHub: dashboard sign-up and login, and POST /api/register.
import { randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';

const N = 32_768; // with r = 8: 32 MiB and ~50-100 ms per hash on one core
const R = 8;
const P = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;

function scrypt(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // maxmem must exceed 128 * N * r bytes, or node refuses the parameters.
    scryptCallback(password, salt, KEY_BYTES, { N: n, r, p, maxmem: 256 * n * r }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await scrypt(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

const STORED =
  /^scrypt\$(\d{4,7})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9_-]{16,64})\$([A-Za-z0-9_-]{32,128})$/;

function acceptable(n: number, r: number, p: number): boolean {
  const power_of_two = (n & (n - 1)) === 0;
  return power_of_two && n >= 1024 && n <= 1_048_576 && r >= 1 && r <= 32 && p >= 1 && p <= 16;
}

/** Constant-time check; false (never a throw) for a missing or malformed stored hash. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const match = stored ? STORED.exec(stored) : null;
  const [n, r, p] = match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0];
  if (!match || !acceptable(n, r, p)) {
    // Spend the same time as a real check, so a missing account cannot be told apart.
    await scrypt(password, DUMMY_SALT, N, R, P);
    return false;
  }
  const expected = Buffer.from(match[5]!, 'base64url');
  const actual = await scrypt(password, Buffer.from(match[4]!, 'base64url'), n, r, p);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

const DUMMY_SALT = randomBytes(SALT_BYTES);
