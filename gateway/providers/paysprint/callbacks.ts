// PaySprint's status callbacks (POST /api/callbacks/<service>/<name>): JSON `{event, param}`
// where `param.referenceid` is our transaction id and `param.status` the transaction's status
// code (read with the entry's `txn_*` codes). The call proves it is PaySprint's the way
// PaySprint's own requests are proved: a JWT in the `Token` header, HS256 with the partner's
// JWT secret, our partner id, a timestamp no older than `token_max_age_s`, and a `reqid` not
// seen before within that window (a replayed callback is refused).
import { callbackSecret, getPath } from '../transport.js';
import { CallbackRefusedError, type ProviderCallbacks, type ProviderEvent } from '../types.js';
import { readJwt } from './auth.js';
import type { PaysprintProviderConfig } from './config.js';

/** Bound on the remembered reqids of accepted callbacks (each kept for the token's age). */
const MAX_SEEN = 10_000;

export class PaysprintCallbacks implements ProviderCallbacks {
  readonly max_body_bytes: number;
  /** reqid → when its token stops being fresh (ms): a reused reqid within it is a replay. */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly config: PaysprintProviderConfig,
    private readonly env: NodeJS.ProcessEnv,
    private readonly now: () => Date,
  ) {
    this.max_body_bytes = config.callback_max_body_bytes;
  }

  private secret(name: string): string {
    return callbackSecret(this.env, name, this.config.name);
  }

  /** The token's reqid and when it goes stale, or CallbackRefusedError. */
  private token(headers: Readonly<Record<string, string | string[] | undefined>>) {
    const given = headers.token;
    if (typeof given !== 'string' || given.length === 0 || given.length > 4_096)
      throw new CallbackRefusedError('unauthenticated', 'the Token header is missing');
    const claims = readJwt(given, this.secret(this.config.jwt_secret_env));
    if ('refused' in claims) throw new CallbackRefusedError('unauthenticated', claims.refused);
    if (claims.partnerId !== this.secret(this.config.partner_id_env))
      throw new CallbackRefusedError('unauthenticated', 'the JWT is for another partner');
    const now_s = Math.floor(this.now().getTime() / 1000);
    const age = now_s - claims.timestamp;
    if (age > this.config.token_max_age_s || age < -this.config.token_max_age_s)
      throw new CallbackRefusedError('unauthenticated', 'the JWT timestamp is stale');
    if ((this.seen.get(claims.reqid) ?? 0) > this.now().getTime())
      throw new CallbackRefusedError('unauthenticated', 'the JWT reqid was used before');
    return {
      reqid: claims.reqid,
      until: (claims.timestamp + this.config.token_max_age_s) * 1000,
    };
  }

  checkHead(headers: Readonly<Record<string, string | string[] | undefined>>): void {
    this.token(headers);
  }

  read(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    raw: Buffer,
  ): ProviderEvent | null {
    const { reqid, until } = this.token(headers);
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new CallbackRefusedError('invalid', 'the callback body is not JSON');
    }
    const text = (path: string, max: number): string | null => {
      const value = getPath(body, path);
      return typeof value === 'string' || typeof value === 'number'
        ? String(value).slice(0, max)
        : null;
    };
    const txn_id = text('param.referenceid', 64);
    const status = text('param.status', 64);
    if (!txn_id || status === null)
      throw new CallbackRefusedError(
        'invalid',
        `the callback has no ${txn_id ? 'param.status' : 'param.referenceid'}`,
      );
    this.remember(reqid, until);
    const codes = this.config.codes;
    const outcome: ProviderEvent['outcome'] | null = codes.txn_success.includes(status)
      ? 'success'
      : codes.txn_failed.includes(status)
        ? 'failed'
        : codes.txn_reversed.includes(status)
          ? 'reversed'
          : codes.txn_pending.includes(status)
            ? 'pending'
            : null;
    if (outcome === null) return null;
    const data: Record<string, string | number> = {};
    const operator_ref = text('param.operatorid', 128);
    if (operator_ref) data.operator_ref = operator_ref;
    const utr = text('param.utr', 64);
    if (utr) data.utr = utr;
    return {
      provider: this.config.name,
      txn_id,
      outcome,
      provider_ref: text('param.ackno', 128),
      message:
        text('param.message', 500) ?? `${text('event', 100) ?? 'status'} ${status} (callback)`,
      ...(outcome === 'failed'
        ? { code: 'declined' }
        : outcome === 'reversed'
          ? { code: 'reversed' }
          : {}),
      data,
    };
  }

  /** Remembers an accepted reqid until its token is stale; the oldest go first past the bound. */
  private remember(reqid: string, until: number): void {
    const now = this.now().getTime();
    for (const [key, expiry] of this.seen) {
      if (expiry > now && this.seen.size < MAX_SEEN) break;
      this.seen.delete(key);
    }
    this.seen.set(reqid, until);
  }
}
