// Signed /api requests, opt-in per account: with a signing secret set, every /api call of the
// account carries `X-AIHub-Timestamp` (Unix seconds) and `X-AIHub-Signature`. Two schemes:
//   v2 (`X-AIHub-Signature: v2=<hex>`): HMAC-SHA256(secret, "v2\n" + timestamp + "\n" +
//       METHOD + "\n" + path with query as sent + "\n" + raw body), so a signature binds the
//       request it was made for and works on no other route, method or query;
//   v1 (`X-AIHub-Signature: <hex>`): HMAC-SHA256(secret, timestamp + "." + raw body), the first
//       scheme, which binds the body only: accepted from secrets made before v2 existed until
//       `payments.signing.v1_until`, with a deprecation header on every answer; never from a
//       secret made since (those carry `v2_only`).
// A missing, wrong or stale (more than five minutes off) signature is 401; a signature seen
// before within its window is 401 too (replay). Seen signatures are remembered in memory
// (bounded) and, with several gateways on one database, claimed in the database every
// gateway sees (Store.claimShared) before the request is acted on, so that a captured request
// replays on no gateway at all. A restart of a lone JSON-file gateway forgets them, which is
// why idempotency keys still matter for money calls.
import { createHmac, randomBytes, timingSafeEqual, type Hmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Request, Response, NextFunction, RequestHandler } from 'express';
import { authenticate } from '../accounts/auth.js';
import { ApiError } from '../http/errors.js';
import { hasBody, rawBodyOf } from '../http/raw-body.js';
import type { Store, Tx } from '../store/types.js';
import type { Account, State } from '../store/state.js';
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
    signing: {
      secret: sealer.sealText(secret, signingSecretAad(account_id)),
      created_at,
      v2_only: true,
    },
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

/** The string a v2 signature is the HMAC of, before the raw body. */
export function v2Prefix(timestamp: string, method: string, target: string): string {
  return `v2\n${timestamp}\n${method.toUpperCase()}\n${target}\n`;
}

const unsigned = (message: string, code: string, field: string) =>
  new ApiError(401, code, message, field, 'authentication_error');

const HOW_TO_SIGN =
  'X-AIHub-Signature: v2=<hex HMAC-SHA256 of "v2\\n" + timestamp + "\\n" + METHOD + "\\n" + path?query + "\\n" + raw body>';

/** The response header on answers to v1-signed requests: until when v1 is accepted, and what to do. */
export const DEPRECATION_HEADER = 'x-aihub-signature-deprecated';

interface Pending {
  account_id: string;
  hmac: Hmac;
  signature: Buffer;
  signature_hex: string;
  expires_ms: number;
}

/** A signature that matched, to be claimed for the deployment (claimShared) before the request is acted on. */
interface Settled {
  key: string;
  expires_ms: number;
}

export interface SigningLimits {
  /** Signatures remembered per account within the window. */
  max_per_account: number;
  /** Signatures remembered in all. */
  max_total: number;
}

export interface SigningDeps {
  now_ms: () => number;
  sealer: Sealer;
  /** Until when v1 signatures are accepted from secrets made before v2 (ISO), or null: never. */
  v1_until?: string | null;
  /** Seen signatures, claimed for every gateway on the store (the PostgreSQL store's table). */
  store?: Pick<Store, 'claimShared'>;
}

export class RequestSigning {
  /** Per account: signature (hex) → when it goes stale, in insertion order. */
  private readonly seen = new Map<string, Map<string, number>>();
  private total = 0;
  private readonly pending = new WeakMap<IncomingMessage, Pending>();
  /** Requests whose signature matched: claimed for the deployment by claimShared. */
  private readonly settled = new WeakMap<IncomingMessage, Settled>();
  /** Requests checked and claimed before any route ran (verifyBeforeRoutes): a route's authorize passes them. */
  private readonly verified = new WeakSet<IncomingMessage>();
  private readonly v1_until_ms: number | null;

  constructor(
    private readonly deps: SigningDeps,
    private readonly limits: SigningLimits = { max_per_account: 100_000, max_total: 1_000_000 },
  ) {
    this.v1_until_ms = deps.v1_until ? Date.parse(deps.v1_until) : null;
  }

  /** Express middleware: makes this instance the one `authorize` checks signatures with. */
  readonly install = (_req: Request, res: Response, next: NextFunction): void => {
    res.locals.request_signing = this;
    next();
  };

  /**
   * Router-level middleware, before every /api route: a request of an account with signing on
   * has its JSON body read (the routes' parser then finds it read), its signature checked and
   * claimed for the whole deployment (awaited: with several gateways the claim is a database
   * statement) before any route acts on it. A multipart body is left to its route (the eKYC
   * upload), which checks as it reads and calls claimShared before it stores anything.
   */
  verifyBeforeRoutes(state: () => State, readJson: RequestHandler): RequestHandler {
    return (req, res, next) => {
      let account: Account;
      try {
        account = authenticate(state(), req.headers).account;
      } catch {
        next(); // no key, or a bad one: the route answers that in its own words
        return;
      }
      if (!account.signing || req.is('multipart/form-data')) {
        next();
        return;
      }
      readJson(req, res, (error?: unknown) => {
        if (error) {
          next(error);
          return;
        }
        try {
          this.begin(req, account);
        } catch (thrown) {
          next(thrown);
          return;
        }
        this.claimShared(req).then(() => {
          this.verified.add(req);
          next();
        }, next);
      });
    };
  }

  /**
   * Checks the headers (present, well-formed, fresh, a scheme this secret may use, not
   * replayed) of a request of an account with signing on, then the signature over the body
   * the JSON parser read (none read: the empty body, so a route can never act on bytes the
   * signature did not cover). A route that reads its body itself passes `body_read_later`,
   * feeds the bytes to `update` as it reads them, calls `settle` and then awaits `claimShared`
   * before acting on them.
   */
  begin(req: IncomingMessage, account: Account, body_read_later = false): void {
    if (!account.signing || this.verified.has(req)) return;
    const timestamp = header(req, TIMESTAMP_HEADER);
    const signature_text = header(req, SIGNATURE_HEADER);
    if (timestamp === undefined || signature_text === undefined) {
      throw unsigned(
        `this account signs its requests: send X-AIHub-Timestamp (Unix seconds) and ${HOW_TO_SIGN}`,
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
    const parsed = /^(?:(v[12])=)?([0-9a-fA-F]{64})$/.exec(signature_text);
    if (!parsed)
      throw unsigned(
        `X-AIHub-Signature must be v2= and 64 hex digits (${HOW_TO_SIGN})`,
        'signature_invalid',
        SIGNATURE_HEADER,
      );
    const scheme = parsed[1] ?? 'v1';
    const now_ms = this.deps.now_ms();
    const at_ms = Math.round(Number(timestamp) * 1000);
    if (Math.abs(now_ms - at_ms) > SIGNATURE_WINDOW_MS) {
      throw unsigned(
        `X-AIHub-Timestamp is more than ${SIGNATURE_WINDOW_MS / 60_000} minutes from the server's time (${Math.floor(now_ms / 1000)})`,
        'signature_expired',
        TIMESTAMP_HEADER,
      );
    }
    if (scheme === 'v1') this.admitV1(req, account, now_ms);
    const signature_hex = parsed[2]!.toLowerCase();
    this.refuseReplay(account.id, signature_hex, now_ms);
    const secret = this.deps.sealer.openText(account.signing.secret, signingSecretAad(account.id));
    const hmac = createHmac('sha256', secret).update(
      scheme === 'v1' ? `${timestamp}.` : v2Prefix(timestamp, req.method ?? 'GET', targetOf(req)),
      'utf8',
    );
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

  /**
   * A v1 signature (timestamp + body, no method or path): refused from secrets made since v2
   * and after `payments.signing.v1_until`; accepted otherwise, with a deprecation header.
   */
  private admitV1(req: IncomingMessage, account: Account, now_ms: number): void {
    const until_ms = this.v1_until_ms;
    if (account.signing?.v2_only || until_ms === null || now_ms > until_ms)
      throw unsigned(
        account.signing?.v2_only
          ? `this signing secret takes v2 signatures only: ${HOW_TO_SIGN}`
          : `v1 signatures (timestamp + "." + body) are no longer accepted${until_ms === null ? '' : ` since ${new Date(until_ms).toISOString()}`}: ${HOW_TO_SIGN}`,
        'signature_scheme_retired',
        SIGNATURE_HEADER,
      );
    (req as Partial<Request>).res?.setHeader(
      DEPRECATION_HEADER,
      `v1 signatures are accepted until ${new Date(until_ms).toISOString()}; sign the method, path and body: ${HOW_TO_SIGN}`,
    );
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
        `X-AIHub-Signature does not match: ${HOW_TO_SIGN}, keyed with the account's signing secret`,
        'signature_invalid',
        SIGNATURE_HEADER,
      );
    }
    const now_ms = this.deps.now_ms();
    this.refuseReplay(pending.account_id, pending.signature_hex, now_ms);
    this.remember(pending.account_id, pending.signature_hex, pending.expires_ms, now_ms);
    this.settled.set(req, {
      key: `sig:${pending.account_id}:${pending.signature_hex}`,
      expires_ms: pending.expires_ms,
    });
  }

  /**
   * Claims a settled signature for the whole deployment (every gateway on one database sees
   * the claim): 401 `signature_replayed` when another gateway accepted it first. Nothing to do
   * on the JSON-file store (this process's memory is the deployment's) or for a request that
   * was not signed.
   */
  async claimShared(req: IncomingMessage): Promise<void> {
    const settled = this.settled.get(req);
    if (!settled || !this.deps.store) return;
    this.settled.delete(req);
    const claimed = await this.deps.store.claimShared(
      settled.key,
      settled.expires_ms,
      this.deps.now_ms(),
    );
    if (claimed) return;
    throw unsigned(
      'this signature was used already (on another gateway): sign every request anew (a new timestamp)',
      'signature_replayed',
      SIGNATURE_HEADER,
    );
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

/** The request target a v2 signature covers: the path with its query, exactly as the client sent it. */
function targetOf(req: IncomingMessage): string {
  return (req as Partial<Request>).originalUrl ?? req.url ?? '/';
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
