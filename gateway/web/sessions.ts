// Dashboard sessions and CSRF tokens.
//
// A session is a random token in an HttpOnly SameSite=Lax cookie; the store keeps only its
// SHA-256, so a copy of the data dir does not log anyone in. Sessions are durable (one
// journal write at login and one at logout) and survive a restart. Sessions end after
// SESSION_LIFETIME_MS at the latest, or after SESSION_IDLE_MS without a request. The idle
// clock runs in memory and is written to the session row at most once per
// SEEN_WRITE_EVERY_MS of activity, so a page view rarely writes, and after a restart a
// session's idle time counts from its last written use (at most that much too generous),
// or from its start: a restart does not revive an idle session.
//
// CSRF: every form carries `_csrf` = HMAC(secret, binding), where the binding is the session
// (logged in) or a random pre-session cookie (the signup and login forms). A POST whose
// token does not match, or whose Origin or Sec-Fetch-Site says it came from another site,
// is refused with 403.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Store, Tx } from '../store/types.js';
import { table } from '../store/state.js';
import { sha256Hex } from '../accounts/keys.js';
import { clearCookie, readCookies, setCookie } from './cookies.js';

export type SessionKind = 'user' | 'admin';

export interface WebSession {
  kind: SessionKind;
  /** The account of a user session; null for an admin session. */
  account_id: string | null;
  created_at: string;
  expires_at: string;
  /** Its last use, written at most every SEEN_WRITE_EVERY_MS (absent: not used since it started). */
  seen_at?: string;
  /** `admin` on the admin's sessions: the index the admin's sessions are found by (they have no account). */
  console?: 'admin';
}

declare module '../store/state.js' {
  interface Tables {
    /** SHA-256 of the session token → session */
    web_sessions: Record<string, WebSession>;
    /** `csrf_secret` → random secret for CSRF tokens */
    web_meta: Record<string, { value: string }>;
  }
}

export const SESSION_LIFETIME_MS = 12 * 60 * 60 * 1000;
export const SESSION_IDLE_MS = 2 * 60 * 60 * 1000;
const MAX_SESSIONS_PER_ACCOUNT = 20;
const SWEEP_LAST_SEEN_ABOVE = 100_000;
/** A log-in deletes at most this many expired sessions, looking at most this far. */
const SWEEP_DELETE = 200;
const SWEEP_WALK = 2_000;
/** How stale a session's written last use may get while it is being used. */
export const SEEN_WRITE_EVERY_MS = 10 * 60 * 1000;

export const COOKIE = { user: 'aihub_session', admin: 'aihub_admin', anon: 'aihub_anon' } as const;
const COOKIE_PATH: Record<SessionKind, string> = { user: '/', admin: '/admin' };

export interface CurrentSession {
  token_hash: string;
  session: WebSession;
}

export class Sessions {
  private readonly last_seen_ms = new Map<string, number>();
  private sweep_above = SWEEP_LAST_SEEN_ABOVE;
  /** Sessions whose last use is being written now (one write at a time per session). */
  private readonly writing_seen = new Set<string>();
  private secret: Promise<Buffer> | null = null;

  /** An account's sessions (log-in keeps at most MAX_SESSIONS_PER_ACCOUNT; disabling an account ends them). */
  private readonly by_account;
  /** The admin's sessions (no account; only they have `console`), found through it. */
  private readonly by_console;
  private sweeping = false;

  constructor(
    private readonly store: Store,
    private readonly now: () => Date,
    private readonly secure_cookies: (req: Request) => boolean,
  ) {
    this.by_account = store.indexBy('web_sessions', 'account_id', { in_transactions: true });
    this.by_console = store.indexBy('web_sessions', 'console', { in_transactions: true });
  }

  private csrfSecret(): Promise<Buffer> {
    this.secret ??= (async () => {
      const existing = this.store.get('web_meta', 'csrf_secret');
      if (existing) return Buffer.from(existing.value, 'base64url');
      const value = randomBytes(32).toString('base64url');
      const stored = await this.store.transact((tx) => {
        const raced = tx.get('web_meta', 'csrf_secret');
        if (raced) return raced.value;
        tx.set('web_meta', 'csrf_secret', { value });
        return value;
      });
      return Buffer.from(stored, 'base64url');
    })().catch((error: unknown) => {
      this.secret = null;
      throw error;
    });
    return this.secret;
  }

  /** The live session of this kind, or null; expired ones are treated as absent. */
  current(req: Request, kind: SessionKind): CurrentSession | null {
    const token = readCookies(req).get(COOKIE[kind]);
    if (!token) return null;
    const token_hash = sha256Hex(token);
    const session = this.store.get('web_sessions', token_hash);
    if (!session || session.kind !== kind) return null;
    const now_ms = this.now().getTime();
    if (Date.parse(session.expires_at) <= now_ms) return null;
    // In memory since this process started; else as written; else since the session began.
    const written_ms = Date.parse(session.seen_at ?? session.created_at);
    const seen = this.last_seen_ms.get(token_hash) ?? written_ms;
    if (now_ms - seen > SESSION_IDLE_MS) return null;
    if (kind === 'user') {
      const account = session.account_id
        ? this.store.get('accounts', session.account_id)
        : undefined;
      if (account?.status !== 'active') return null;
    }
    this.last_seen_ms.set(token_hash, now_ms);
    if (now_ms - written_ms >= SEEN_WRITE_EVERY_MS) this.writeSeen(token_hash, now_ms);
    if (this.last_seen_ms.size > this.sweep_above) {
      // Only entries whose session is gone or past its absolute end: dropping the entry of an
      // idle session would revive it. The next sweep waits for the map to double, so a
      // process with more live sessions than that does not pass over them on every view.
      for (const hash of this.last_seen_ms.keys()) {
        const row = this.store.get('web_sessions', hash);
        if (!row || Date.parse(row.expires_at) <= now_ms) this.last_seen_ms.delete(hash);
      }
      this.sweep_above = Math.max(SWEEP_LAST_SEEN_ABOVE, this.last_seen_ms.size * 2);
    }
    return { token_hash, session };
  }

  /**
   * Starts a session inside the caller's transaction (with whatever else the login does:
   * an audit record, a new account), drops expired sessions and the oldest beyond the
   * per-account limit. Returns the token for the cookie.
   */
  startInTx(
    tx: Tx,
    kind: SessionKind,
    account_id: string | null,
  ): { token: string; token_hash: string } {
    const token = randomBytes(32).toString('base64url');
    const now_ms = tx.now.getTime();
    const sessions = table(tx.state, 'web_sessions');
    // Expired sessions go after the log-in, in a transaction of their own (sweepExpired).
    tx.onUndo(this.sweepSoon());
    // This account's live sessions (admin sessions, which have no account, are few: those
    // are the sessions of kind admin).
    const candidates = [
      ...(account_id === null ? this.by_console.ids('admin') : this.by_account.ids(account_id)),
    ];
    const mine: Array<[string, WebSession]> = [];
    for (const hash of candidates) {
      const session = sessions[hash];
      if (
        session &&
        session.kind === kind &&
        session.account_id === account_id &&
        Date.parse(session.expires_at) > now_ms
      )
        mine.push([hash, session]);
    }
    mine.sort((a, b) => a[1].created_at.localeCompare(b[1].created_at));
    for (const [hash] of mine.slice(0, Math.max(0, mine.length - (MAX_SESSIONS_PER_ACCOUNT - 1))))
      tx.del('web_sessions', hash);
    const token_hash = sha256Hex(token);
    tx.set('web_sessions', token_hash, {
      kind,
      account_id,
      ...(kind === 'admin' ? { console: 'admin' as const } : {}),
      created_at: tx.now.toISOString(),
      expires_at: new Date(now_ms + SESSION_LIFETIME_MS).toISOString(),
    });
    return { token, token_hash };
  }

  /** Starts a sweep of expired sessions on the next turn of the event loop; returns its cancel (a log-in undone). */
  private sweepSoon(): () => void {
    const timer = setImmediate(() => void this.sweepExpired());
    return () => clearImmediate(timer);
  }

  /**
   * Deletes expired sessions, oldest first: every session lives SESSION_LIFETIME_MS, so
   * creation order is expiry order, and a short walk from the start finds them (bounded: at
   * most SWEEP_WALK looked at and SWEEP_DELETE deleted per log-in; the next log-in goes on).
   * Readers treat an expired session as absent anyway. One at a time.
   */
  private async sweepExpired(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for await (const ids of this.store.scan('web_sessions', SWEEP_WALK)) {
        await this.store.transact((tx) => {
          const now_ms = tx.now.getTime();
          for (let i = 0, swept = 0; i < ids.length && swept < SWEEP_DELETE; i++) {
            const session = tx.get('web_sessions', ids[i]!);
            if (!session) continue; // deleted earlier
            if (Date.parse(session.expires_at) > now_ms) break;
            tx.del('web_sessions', ids[i]!);
            swept++;
          }
        });
        break; // the first page only: the oldest sessions
      }
    } catch {
      // The next log-in sweeps again.
    } finally {
      this.sweeping = false;
    }
  }

  /** Writes the session's last use, in the background: the page does not wait for it, and losing it in a crash only shortens the session. */
  private writeSeen(token_hash: string, now_ms: number): void {
    if (this.writing_seen.has(token_hash)) return;
    this.writing_seen.add(token_hash);
    const seen_at = new Date(now_ms).toISOString();
    this.store
      .transact((tx) => {
        const row = tx.get('web_sessions', token_hash);
        if (row && (row.seen_at ?? '') < seen_at)
          tx.set('web_sessions', token_hash, { ...row, seen_at });
      })
      .catch(() => undefined)
      .finally(() => this.writing_seen.delete(token_hash));
  }

  setSessionCookie(req: Request, res: Response, kind: SessionKind, token: string): void {
    setCookie(res, COOKIE[kind], token, {
      path: COOKIE_PATH[kind],
      max_age_s: SESSION_LIFETIME_MS / 1000,
      secure: this.secure_cookies(req),
      same_site: 'Lax',
    });
  }

  async end(
    req: Request,
    res: Response,
    kind: SessionKind,
    current: CurrentSession | null,
  ): Promise<void> {
    if (current) {
      await this.store.transact((tx) => tx.del('web_sessions', current.token_hash));
      this.last_seen_ms.delete(current.token_hash);
    }
    clearCookie(res, COOKIE[kind], {
      path: COOKIE_PATH[kind],
      secure: this.secure_cookies(req),
      same_site: 'Lax',
    });
  }

  /** Ends every session of an account (e.g. when an admin disables it). */
  endAllInTx(tx: Tx, account_id: string): void {
    for (const hash of [...this.by_account.ids(account_id)]) tx.del('web_sessions', hash);
  }

  /** The pre-session binding for anonymous forms; sets the cookie when missing. */
  anonBinding(req: Request, res: Response): string {
    const existing = readCookies(req).get(COOKIE.anon);
    if (existing && existing.length >= 32) return `anon:${existing}`;
    const value = randomBytes(24).toString('base64url');
    setCookie(res, COOKIE.anon, value, {
      path: '/',
      secure: this.secure_cookies(req),
      same_site: 'Lax',
    });
    // Later reads in this request see it too.
    req.headers.cookie = `${req.headers.cookie ? `${req.headers.cookie}; ` : ''}${COOKIE.anon}=${value}`;
    return `anon:${value}`;
  }

  async csrfToken(binding: string): Promise<string> {
    return createHmac('sha256', await this.csrfSecret())
      .update(binding)
      .digest('base64url');
  }

  async csrfValid(binding: string | null, presented: unknown): Promise<boolean> {
    if (!binding || typeof presented !== 'string' || presented.length > 100) return false;
    const expected = Buffer.from(await this.csrfToken(binding));
    const given = Buffer.from(presented);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}

/** The binding a form of this request is tied to: the session when there is one. */
export function sessionBinding(token_hash: string): string {
  return `session:${token_hash}`;
}

export function anonBindingOf(req: Request): string | null {
  const value = readCookies(req).get(COOKIE.anon);
  return value && value.length >= 32 ? `anon:${value}` : null;
}
