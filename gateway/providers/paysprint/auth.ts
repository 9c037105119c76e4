// PaySprint's request authentication, as its API reference describes it: every request carries
// a fresh JWT (HS256, signed with the partner's JWT secret) over `{timestamp, partnerId, reqid}`
// in the `Token` header, `timestamp` in seconds (valid for five minutes) and `reqid` unique per
// request; beside it the `Authorisedkey` header. Where a service wants its body encrypted, the
// JSON is AES-128-CBC encrypted with the partner's key and IV (PKCS#7 padding) and sent as
// `{"body": "<base64>"}`. node:crypto does all of it: HS256 is one HMAC, and a JWT library
// would add a dependency for forty lines (and its own algorithm negotiation to get wrong).
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  randomInt,
  timingSafeEqual,
} from 'node:crypto';

export interface JwtClaims {
  timestamp: number;
  partnerId: string;
  reqid: string;
}

const HEADER = base64url(JSON.stringify({ typ: 'JWT', alg: 'HS256' }));

function base64url(text: string | Buffer): string {
  return Buffer.from(text).toString('base64url');
}

/** The `Token` header's value: HS256 over the claims, keyed with the JWT secret. */
export function signJwt(claims: JwtClaims, secret: string): string {
  const payload = base64url(JSON.stringify(claims));
  const signature = createHmac('sha256', secret).update(`${HEADER}.${payload}`).digest();
  return `${HEADER}.${payload}.${base64url(signature)}`;
}

/**
 * The claims of a token signed with `secret` (HS256 only, the signature compared in constant
 * time), or a reason it is refused. Freshness and `reqid` reuse are the caller's to judge.
 */
export function readJwt(token: string, secret: string): JwtClaims | { refused: string } {
  const parts = token.split('.');
  if (parts.length !== 3) return { refused: 'not a JWT' };
  const [head, payload, signature] = parts as [string, string, string];
  let header: unknown;
  let claims: unknown;
  try {
    header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8'));
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { refused: 'the JWT is not readable' };
  }
  if (!header || typeof header !== 'object' || (header as { alg?: unknown }).alg !== 'HS256')
    return { refused: 'the JWT is not HS256' };
  const expected = createHmac('sha256', secret).update(`${head}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { refused: 'the JWT signature does not match' };
  if (!claims || typeof claims !== 'object') return { refused: 'the JWT has no claims' };
  const { timestamp, partnerId, reqid } = claims as Record<string, unknown>;
  if (typeof timestamp !== 'number' || !Number.isInteger(timestamp))
    return { refused: 'the JWT has no timestamp' };
  if (typeof partnerId !== 'string' || typeof reqid !== 'string' || reqid.length === 0)
    return { refused: 'the JWT has no partnerId or reqid' };
  return { timestamp, partnerId, reqid };
}

/** A request id unique per request (PaySprint: "a unique integer for each request"). */
export function newReqid(now: Date): string {
  return `${now.getTime()}${String(randomInt(0, 1_000_000_000)).padStart(9, '0')}`;
}

/** AES-128-CBC with the partner's 16-byte key and IV, base64 of the ciphertext. */
export function encryptBody(plain: string, key: string, iv: string): string {
  const cipher = createCipheriv('aes-128-cbc', aesBytes(key, 'key'), aesBytes(iv, 'IV'));
  return Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]).toString('base64');
}

export function decryptBody(encrypted: string, key: string, iv: string): string {
  const decipher = createDecipheriv('aes-128-cbc', aesBytes(key, 'key'), aesBytes(iv, 'IV'));
  return Buffer.concat([
    decipher.update(Buffer.from(encrypted, 'base64')),
    decipher.final(),
  ]).toString('utf8');
}

/** PaySprint issues the key and IV as 16-character strings: their bytes are the key and IV. */
function aesBytes(text: string, what: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length !== 16)
    throw new RangeError(`the AES ${what} must be 16 bytes, not ${bytes.length}`);
  return bytes;
}
