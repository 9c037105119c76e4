// Eko's request authentication ("Security 2.0"): every call carries the static developer key,
// a millisecond timestamp and `secret-key` = base64(HMAC-SHA256(key = base64(access_key),
// message = timestamp)), fresh per call (a stale one is refused with 403). A call that debits
// a wallet also carries `request_hash` = base64(HMAC-SHA256(key = base64(access_key),
// message = the API's fields concatenated in its documented order)).
import { createHmac } from 'node:crypto';

function sign(access_key: string, message: string): string {
  const key = Buffer.from(access_key, 'utf8').toString('base64');
  return createHmac('sha256', key).update(message, 'utf8').digest('base64');
}

/** The `secret-key` of a call made at `timestamp_ms`. */
export function ekoSecretKey(access_key: string, timestamp_ms: string): string {
  return sign(access_key, timestamp_ms);
}

/** The `request_hash` over `parts`, which begin with the call's secret-key-timestamp. */
export function ekoRequestHash(access_key: string, parts: readonly string[]): string {
  return sign(access_key, parts.join(''));
}

/** The authentication headers of one call. */
export function ekoHeaders(
  developer_key: string,
  access_key: string,
  timestamp_ms: string,
): Record<string, string> {
  return {
    accept: 'application/json',
    developer_key,
    'secret-key': ekoSecretKey(access_key, timestamp_ms),
    'secret-key-timestamp': timestamp_ms,
  };
}
