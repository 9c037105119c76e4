// Signed /api requests, opt-in per account: with a signing secret set, every /api call of the
// account carries `X-AIHub-Timestamp` (Unix seconds) and `X-AIHub-Signature` = hex
// HMAC-SHA256(secret, timestamp + "." + raw body). A missing, wrong or stale (more than five
// minutes off) signature is 401; a signature seen before within its window is 401 too (replay).
// The replay cache is in memory and bounded: a restart forgets it, which is why idempotency
// keys still matter for money calls.
import { createHmac, randomBytes, timingSafeEqual, type Hmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Request, Response, NextFunction } from 'express';
import { ApiError } from '../http/errors.js';
import { hasBody, rawBodyOf } from '../http/raw-body.js';
import type { Tx } from '../store/store.js';
import type { Account } from '../store/state.js';
import type { Sealer } from '../util/sealed.js';
import { signingSecretAad } from './sealing.js';

export const TIMESTAMP_HEADER = 'x-aihub-timestamp';
export const SIGNATURE_HEADER = 'x-aihub-signature';
export const SIGNATURE_WINDOW_MS = 5 * 60_000;

export function newSigningSecret(): string {
  return `sigsec_${randomBytes(32).toString('hex')}`;
}

/** Turns signing on (or replaces the secret); returns the secret, shown once. */
export function setSigningSecret(
  tx: Tx,
  account_id: string,
  sealer: Sealer,
): { secret: string; created_at: string } {
  const account = tx.get('accounts', account_id);
  if (!account) throw new Error(`invariant: no account ${account_id}`);
  const secret = newSigningSecret();
  const created_at = tx.now.toISOString();
  tx.set('accounts', account_id, {
    ...account,
    signing: { secret: sealer.sealText(secret, signingSecretAad(account_id)), created_at },
  });
  return { secret, created_at };
}

export function clearSigningSecret(tx: Tx, account_id: string): void {
  const account = tx.get('accounts', account_id);
  if (account?.signing) tx.set('accounts', account_id, { ...account, signing: null });
}

export function signingView(account: Account): { enabled: boolean; created_at: string | null } {
  return { enabled: !!account.signing, created_at: account.signing?.created_at ?? null };
}

const unsigned = (message: string, code: string, field: string) =>
  new ApiError(401, code, message, field, 'authentication_error');

interface Pending {
  account_id: string;
  hmac: Hmac;
  signature: Buffer;
  signature_hex: string;
  expires_ms: number;
}

export interface SigningLimits {
  /** Signatures remembered per account within the window. */
  max_per_account: number;
  /** Signatures remembered in all. */
  max_total: number;
}

export class RequestSigning {
  /** Per account: signature (hex) → when it goes stale, in insertion order. */
  private readonly seen = new Map<string, Map<string, number>>();
  private total = 0;
  private readonly pending = new WeakMap<IncomingMessage, Pending>();

  constructor(
    private readonly deps: { now_ms: () => number; sealer: Sealer },
    private readonly limits: SigningLimits = { max_per_account: 100_000, max_total: 1_000_000 },
  ) {}

  /** Express middleware: makes this instance the one `authorize` checks signatures with. */
  readonly install = (_req: Request, res: Response, next: NextFunction): void => {
    res.locals.request_signing = this;
    next();
  };

  /**
   * Checks the headers (present, well-formed, fresh, not replayed) of a request of an account
   * with signing on, then the signature over the body the JSON parser read (none read: the
   * empty body, so a route can never act on bytes the signature did not cover). A route that
   * reads its body itself passes `body_read_later`, feeds the bytes to `update` as it reads
   * them and calls `settle` before acting on them.
   */
  begin(req: IncomingMessage, account: Account, body_read_later = false): void {
    if (!account.signing) return;
    const timestamp = header(req, TIMESTAMP_HEADER);
    const signature_text = header(req, SIGNATURE_HEADER);
    if (timestamp === undefined || signature_text === undefined) {
      throw unsigned(
        'this account signs its requests: send X-AIHub-Timestamp (Unix seconds) and X-AIHub-Signature (hex HMAC-SHA256 of timestamp + "." + raw body)',
        'signature_required',
        timestamp === undefined ? TIMESTAMP_HEADER : SIGNATURE_HEADER,
      );
    }
    if (!/^\d{1,12}(\.\d{1,6})?$/.test(timestamp))
      throw unsigned(
        'X-AIHub-Timestamp must be Unix time in seconds (fractions allowed, e.g. 1767225600.250)',
        'signature_invalid',
        TIMESTAMP_HEADER,
      );
    if (!/^[0-9a-fA-F]{64}$/.test(signature_text))
      throw unsigned(
        'X-AIHub-Signature must be 64 hex digits',
        'signature_invalid',
        SIGNATURE_HEADER,
      );
    const now_ms = this.deps.now_ms();
    const at_ms = Math.round(Number(timestamp) * 1000);
    if (Math.abs(now_ms - at_ms) > SIGNATURE_WINDOW_MS) {
      throw unsigned(
        `X-AIHub-Timestamp is more than ${SIGNATURE_WINDOW_MS / 60_000} minutes from the server's time (${Math.floor(now_ms / 1000)})`,
        'signature_expired',
        TIMESTAMP_HEADER,
      );
    }
    const signature_hex = signature_text.toLowerCase();
    this.refuseReplay(account.id, signature_hex, now_ms);
    const secret = this.deps.sealer.openText(account.signing.secret, signingSecretAad(account.id));
    const hmac = createHmac('sha256', secret).update(`${timestamp}.`, 'utf8');
    this.pending.set(req, {
      account_id: account.id,
      hmac,
      signature: Buffer.from(signature_hex, 'hex'),
      signature_hex,
      expires_ms: at_ms + SIGNATURE_WINDOW_MS,
    });
    const raw = rawBodyOf(req);
    if (body_read_later && raw === undefined && hasBody(req)) return;
    if (raw) this.update(req, raw);
    this.settle(req);
  }

  /** True while a signature waits for the body the route is reading. */
  waiting(req: IncomingMessage): boolean {
    return this.pending.has(req);
  }

  update(req: IncomingMessage, chunk: Buffer): void {
    this.pending.get(req)?.hmac.update(chunk);
  }

  /** Compares in constant time and remembers the signature; 401 when it does not match or was seen meanwhile. */
  settle(req: IncomingMessage): void {
    const pending = this.pending.get(req);
    if (!pending) return;
    this.pending.delete(req);
    const expected = pending.hmac.digest();
    if (!timingSafeEqual(expected, pending.signature)) {
      throw unsigned(
        'X-AIHub-Signature does not match: sign timestamp + "." + the raw body with the account\'s signing secret',
        'signature_invalid',
        SIGNATURE_HEADER,
      );
    }
    const now_ms = this.deps.now_ms();
    this.refuseReplay(pending.account_id, pending.signature_hex, now_ms);
    this.remember(pending.account_id, pending.signature_hex, pending.expires_ms, now_ms);
  }

  private refuseReplay(account_id: string, signature_hex: string, now_ms: number): void {
    const until_ms = this.seen.get(account_id)?.get(signature_hex);
    if (until_ms !== undefined && until_ms >= now_ms) {
      throw unsigned(
        'this signature was used already: sign every request anew (a new timestamp)',
        'signature_replayed',
        SIGNATURE_HEADER,
      );
    }
  }

  private remember(
    account_id: string,
    signature_hex: string,
    expires_ms: number,
    now_ms: number,
  ): void {
    let list = this.seen.get(account_id);
    if (!list) this.seen.set(account_id, (list = new Map()));
    this.dropStale(list, now_ms);
    if (list.size >= this.limits.max_per_account || this.total >= this.limits.max_total) {
      for (const other of this.seen.values()) this.dropStale(other, now_ms, true);
      if (list.size >= this.limits.max_per_account || this.total >= this.limits.max_total) {
        throw new ApiError(
          429,
          'too_many_signed_requests',
          'too many signed requests within five minutes to remember them all; try again shortly',
          null,
          'rate_limit_exceeded',
          { 'retry-after': '5' },
        );
      }
    }
    if (!list.has(signature_hex)) this.total++;
    list.set(signature_hex, expires_ms);
  }

  /** Drops stale signatures: from the front (insertion order, close to time order), or all of them when `full`. */
  private dropStale(list: Map<string, number>, now_ms: number, full = false): void {
    for (const [signature, until_ms] of list) {
      if (until_ms >= now_ms) {
        if (full) continue;
        break;
      }
      list.delete(signature);
      this.total--;
    }
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value.trim() : undefined;
}

/** The instance installed on the /api router; a signing account on a router without one is a programming error, never a pass. */
export function requestSigningOf(res: Response): RequestSigning {
  const signing = res.locals.request_signing as RequestSigning | undefined;
  if (!signing) throw new Error('invariant: request signing is not installed on this router');
  return signing;
}
