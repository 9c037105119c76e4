// Encryption at rest: AES-256-GCM with a random 96-bit IV per value, the key's id in the
// clear (so several keys can be open at once during a rotation) and additional data that
// binds a ciphertext to its place (an account's webhook secret cannot be moved to another
// account). Values written before encryption existed carry no prefix and pass through as
// plaintext, so an old data dir still opens; they are sealed on the next start.
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';

export const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const TEXT_PREFIX = 'enc:v1:';
const FILE_MAGIC = Buffer.from('AIHUB-ENC1', 'ascii');
const KID_CHARS = 8;
const FINGERPRINT_PREFIX = 'fp:v1:';
/** The longest value a fingerprint takes: one AES block with its padding. */
export const FINGERPRINT_MAX_BYTES = 15;

export class SealError extends Error {
  override name = 'SealError';
}

/** A key from its text form: 64 hex digits, or 32 bytes in base64 / base64url. */
export function parseKey(text: string, source: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)
      ? Buffer.from(trimmed, 'base64')
      : null;
  if (!key || key.length !== KEY_BYTES)
    throw new SealError(
      `${source}: an encryption key is 32 bytes, written as 64 hex digits (make one with: openssl rand -hex 32)`,
    );
  return key;
}

export function newKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

export function keyId(key: Buffer): string {
  return createHash('sha256')
    .update('aihub-encryption-key-id:')
    .update(key)
    .digest('hex')
    .slice(0, KID_CHARS);
}

/** Seals with the first key; opens with any key of the ring. */
export class Sealer {
  private readonly keys = new Map<string, Buffer>();
  readonly current_id: string;

  constructor(ring: readonly Buffer[]) {
    if (ring.length === 0) throw new SealError('no encryption key');
    for (const key of ring) if (!this.keys.has(keyId(key))) this.keys.set(keyId(key), key);
    this.current_id = keyId(ring[0]!);
  }

  private encrypt(plain: Buffer, aad: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.current_id)!, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]);
  }

  private decrypt(kid: string, sealed: Buffer, aad: string, what: string): Buffer {
    const key = this.keys.get(kid);
    if (!key)
      throw new SealError(
        `${what} is sealed with encryption key ${kid}, which is not among the keys given (AIHUB_ENCRYPTION_KEY, AIHUB_ENCRYPTION_OLD_KEYS, the data dir's encryption.key)`,
      );
    if (sealed.length < IV_BYTES + TAG_BYTES)
      throw new SealError(`${what}: the sealed value is truncated`);
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([
        decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)),
        decipher.final(),
      ]);
    } catch {
      throw new SealError(
        `${what}: the sealed value does not authenticate (altered, or moved from another place)`,
      );
    }
  }

  sealText(plain: string, aad: string): string {
    return `${TEXT_PREFIX}${this.current_id}:${this.encrypt(Buffer.from(plain, 'utf8'), aad).toString('base64url')}`;
  }

  /** The plaintext of a sealed value; a value from before encryption (no prefix) is returned as it is. */
  openText(value: string, aad: string): string {
    if (!value.startsWith(TEXT_PREFIX)) return value;
    const kid = value.slice(TEXT_PREFIX.length, TEXT_PREFIX.length + KID_CHARS);
    const body = Buffer.from(value.slice(TEXT_PREFIX.length + KID_CHARS + 1), 'base64url');
    return this.decrypt(kid, body, aad, aad).toString('utf8');
  }

  /** True when the value is sealed with the current key (nothing to migrate). */
  isCurrentText(value: string): boolean {
    return value.startsWith(`${TEXT_PREFIX}${this.current_id}:`);
  }

  /**
   * A value's fingerprint: equal values (of one purpose) give equal fingerprints under one key,
   * so a table can be indexed by it (a duplicate Aadhaar number across accounts) without the
   * value in clear. One AES-256 block (a pseudo-random permutation: nothing but equality is
   * told) under a key derived for the purpose, so a key rotation can turn an old fingerprint
   * into the new key's (refingerprint). Values of at most FINGERPRINT_MAX_BYTES.
   */
  fingerprint(value: string, purpose: string): string {
    const plain = Buffer.from(value, 'utf8');
    if (plain.length > FINGERPRINT_MAX_BYTES)
      throw new SealError(`a fingerprinted value is at most ${FINGERPRINT_MAX_BYTES} bytes`);
    const cipher = createCipheriv('aes-256-ecb', this.purposeKey(this.current_id, purpose), null);
    const block = Buffer.concat([cipher.update(plain), cipher.final()]);
    return `${FINGERPRINT_PREFIX}${this.current_id}:${block.toString('base64url')}`;
  }

  isCurrentFingerprint(fingerprint: string): boolean {
    return fingerprint.startsWith(`${FINGERPRINT_PREFIX}${this.current_id}:`);
  }

  /** The same fingerprint under the current key (null when it is under the current key already). */
  refingerprint(fingerprint: string, purpose: string): string | null {
    if (this.isCurrentFingerprint(fingerprint)) return null;
    const kid = fingerprint.slice(FINGERPRINT_PREFIX.length, FINGERPRINT_PREFIX.length + KID_CHARS);
    if (!fingerprint.startsWith(FINGERPRINT_PREFIX) || !this.keys.has(kid))
      throw new SealError(
        `a ${purpose} fingerprint is under encryption key ${kid}, which is not among the keys given`,
      );
    const decipher = createDecipheriv('aes-256-ecb', this.purposeKey(kid, purpose), null);
    const block = Buffer.from(
      fingerprint.slice(FINGERPRINT_PREFIX.length + KID_CHARS + 1),
      'base64url',
    );
    let plain: string;
    try {
      plain = Buffer.concat([decipher.update(block), decipher.final()]).toString('utf8');
    } catch {
      throw new SealError(`a ${purpose} fingerprint does not open (altered)`);
    }
    return this.fingerprint(plain, purpose);
  }

  private purposeKey(kid: string, purpose: string): Buffer {
    return createHmac('sha256', this.keys.get(kid)!)
      .update(`aihub-fingerprint:${purpose}`)
      .digest();
  }

  sealBytes(plain: Buffer, aad: string): Buffer {
    return Buffer.concat([
      FILE_MAGIC,
      Buffer.from(this.current_id, 'ascii'),
      this.encrypt(plain, aad),
    ]);
  }

  /**
   * Seals a file as it streams (an upload written to disk as it arrives), in the format of
   * `sealBytes`: write `head`, then what `update` returns for each chunk, then `final()`'s
   * `rest`, then its `tag` at byte `tag_offset` (written as zeros in `head`: GCM's tag is known
   * only at the end).
   */
  sealingStream(aad: string): {
    head: Buffer;
    tag_offset: number;
    update(plain: Buffer): Buffer;
    final(): { rest: Buffer; tag: Buffer };
  } {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.current_id)!, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const prefix = Buffer.concat([FILE_MAGIC, Buffer.from(this.current_id, 'ascii'), iv]);
    return {
      head: Buffer.concat([prefix, Buffer.alloc(TAG_BYTES)]),
      tag_offset: prefix.length,
      update: (plain) => cipher.update(plain),
      final: () => ({ rest: cipher.final(), tag: cipher.getAuthTag() }),
    };
  }

  /** The plaintext of a sealed file; a file from before encryption is returned as it is. */
  openBytes(data: Buffer, aad: string): Buffer {
    if (!data.subarray(0, FILE_MAGIC.length).equals(FILE_MAGIC)) return data;
    const kid = data.subarray(FILE_MAGIC.length, FILE_MAGIC.length + KID_CHARS).toString('ascii');
    return this.decrypt(kid, data.subarray(FILE_MAGIC.length + KID_CHARS), aad, aad);
  }

  isCurrentBytes(data: Buffer): boolean {
    return (
      data.subarray(0, FILE_MAGIC.length).equals(FILE_MAGIC) &&
      data.subarray(FILE_MAGIC.length, FILE_MAGIC.length + KID_CHARS).toString('ascii') ===
        this.current_id
    );
  }
}
