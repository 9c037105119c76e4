// What every dashboard route shares: sessions, CSRF checks, rate limits, the history index,
// one-time notices (shown once after a redirect), form parsing and page rendering.
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { z } from 'zod';
import type { WebDeps } from './deps.js';
import { ApiError, knownError } from '../http/errors.js';
import type { Account } from '../store/state.js';
import { RateLimiter } from '../kernel/rate-limit.js';
import { HistoryIndex } from './history-index.js';
import { html, type Html } from './html.js';
import { page, type NavItem, type Notice, type PageOptions } from './layout.js';
import {
  Sessions,
  anonBindingOf,
  sessionBinding,
  type CurrentSession,
  type SessionKind,
} from './sessions.js';

export interface FormErrors {
  [field: string]: string;
}

/** A one-time notice, optionally with a secret (a new key) shown once. */
export interface Flash extends Notice {
  secret?: { label: string; value: string };
}

/** What an admin console account section (eKYC, services, IP whitelist) is drawn from. */
export interface AccountSectionInput {
  ctx: WebContext;
  account: Account;
  csrf: string;
  errors: FormErrors | undefined;
  values: Record<string, string>;
  form: string | undefined;
}

/**
 * At most `max` failures in any window of `window_ms` per key (an email, an address), for the
 * whole deployment: with several gateways on one database each counts its share of `max`.
 */
function failures(rule: { max: number; window_ms: number }, gateways: () => number): RateLimiter {
  return new RateLimiter({ ...rule, refill: 'sliding' }, { max_keys: 50_000, shared_by: gateways });
}

const FLASH_TTL_MS = 5 * 60 * 1000;

export class WebContext {
  readonly sessions: Sessions;
  readonly index: HistoryIndex;
  /** The gateways a deployment-wide limit is shared among (1 on the JSON-file store). */
  private readonly gateways = () => this.deps.store.liveGateways();
  /** Failed logins per email: 5 per 15 minutes. */
  readonly login_by_email = failures({ max: 5, window_ms: 15 * 60_000 }, this.gateways);
  /** Failed logins per client address: 20 per 15 minutes. */
  readonly login_by_ip = failures({ max: 20, window_ms: 15 * 60_000 }, this.gateways);
  /** Admin token attempts per client address: 5 per 15 minutes. */
  readonly admin_by_ip = failures({ max: 5, window_ms: 15 * 60_000 }, this.gateways);
  /** Sign-ups per client address: 10 per hour (each costs a hash and a journal write). */
  readonly signup_by_ip = failures({ max: 10, window_ms: 60 * 60_000 }, this.gateways);
  private readonly flashes = new Map<string, Flash & { until_ms: number }>();
  /** Pages that call other rooms' services, present once those rooms exist (see payments.ts). */
  readonly extensions: { reports?: unknown } = {};
  /** Extra admin console sections (eKYC, services, IP whitelist) and their navigation. */
  readonly admin_nav: NavItem[] = [];
  readonly admin_account_sections: Array<(input: AccountSectionInput) => Html> = [];
  readonly form = express.urlencoded({ extended: false, limit: '32kb', parameterLimit: 100 });

  constructor(readonly deps: WebDeps) {
    const secure_public = (deps.config.public_url ?? '').startsWith('https:');
    this.sessions = new Sessions(
      deps.store,
      () => deps.clock.now(),
      (req) => secure_public || req.secure,
    );
    this.index = new HistoryIndex(deps.store);
  }

  get currency(): string {
    return this.deps.config.currency;
  }

  now(): Date {
    return this.deps.clock.now();
  }

  nowMs(): number {
    return this.deps.clock.now().getTime();
  }

  publicUrl(): string {
    return this.deps.public_url();
  }

  clientIp(req: Request): string {
    return req.ip ?? req.socket.remoteAddress ?? 'unknown';
  }

  setFlash(binding: string, flash: Flash): void {
    this.flashes.set(binding, { ...flash, until_ms: this.nowMs() + FLASH_TTL_MS });
    if (this.flashes.size > 10_000) this.flashes.delete(this.flashes.keys().next().value as string);
  }

  takeFlash(binding: string): Flash | null {
    const flash = this.flashes.get(binding);
    if (!flash) return null;
    this.flashes.delete(binding);
    return flash.until_ms > this.nowMs() ? flash : null;
  }

  send(res: Response, status: number, options: Omit<PageOptions, 'mode'> & PageSources): void {
    setPageHeaders(res, options.sources);
    res.status(status);
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.send(page({ ...options, mode: this.deps.config.mode }).text);
  }

  /** Refuses a POST that did not come from one of our own forms (403). */
  async checkCsrf(req: Request, binding: string | null): Promise<void> {
    const fetch_site = req.headers['sec-fetch-site'];
    if (fetch_site === 'cross-site')
      throw new ApiError(403, 'csrf', 'This form was sent from another site.');
    const origin = req.headers.origin;
    if (typeof origin === 'string' && origin !== 'null') {
      const host = req.headers.host;
      let same = false;
      try {
        same = new URL(origin).host === host;
      } catch {
        same = false;
      }
      if (!same) throw new ApiError(403, 'csrf', 'This form was sent from another site.');
    }
    const body = req.body as Record<string, unknown> | undefined;
    if (!(await this.sessions.csrfValid(binding, body?._csrf))) {
      throw new ApiError(
        403,
        'csrf',
        'This form has expired or is missing its security token. Reload the page and try again.',
      );
    }
  }

  /** Middleware: a user session or a redirect to /login (GET) / 401 page (POST). */
  requireSession(kind: SessionKind): RequestHandler {
    const login = kind === 'admin' ? '/admin/login' : '/login';
    return (req: Request, res: Response, next: NextFunction) => {
      const current = this.sessions.current(req, kind);
      if (current) {
        res.locals.web_session = current;
        if (current.session.account_id) res.locals.account_id = current.session.account_id;
        next();
        return;
      }
      if (req.method === 'GET' || req.method === 'HEAD') {
        const next_path = req.originalUrl.length <= 500 ? req.originalUrl : undefined;
        res.redirect(303, next_path ? `${login}?next=${encodeURIComponent(next_path)}` : login);
        return;
      }
      next(new ApiError(401, 'session_expired', 'Your session has ended. Log in again.'));
    };
  }

  /** Middleware for POSTs of a logged-in area: parse the form, then check its token. */
  postGuard(kind: SessionKind): RequestHandler[] {
    return [
      this.requireSession(kind),
      this.form,
      async (req: Request, res: Response, next: NextFunction) => {
        try {
          await this.checkCsrf(
            req,
            sessionBinding((res.locals.web_session as CurrentSession).token_hash),
          );
          next();
        } catch (error) {
          next(error);
        }
      },
    ];
  }

  /** Middleware for anonymous POSTs (signup, login): the pre-session cookie binds the token. */
  anonPostGuard(): RequestHandler[] {
    return [
      this.form,
      async (req: Request, _res: Response, next: NextFunction) => {
        try {
          await this.checkCsrf(req, anonBindingOf(req));
          next();
        } catch (error) {
          next(error);
        }
      },
    ];
  }

  /** Renders errors of dashboard routes as HTML pages instead of the API's JSON. */
  errorPage(area: PageOptions['area']) {
    return (error: unknown, req: Request, res: Response, next: NextFunction): void => {
      if (res.headersSent) {
        next(error);
        return;
      }
      let status = 500;
      let message =
        'Something went wrong on our side. The request id identifies it in the gateway log.';
      const known = knownError(error);
      if (known && !(error instanceof ApiError) && known.status === 413) {
        status = 413;
        message = 'The form was larger than allowed.';
      } else if (known) {
        status = known.status;
        message = known.message;
      } else {
        this.deps.logger.error({
          msg: 'dashboard error',
          request_id: res.locals.request_id,
          route: req.path,
          err: error,
        });
      }
      if ((status === 429 || status === 503) && known)
        for (const [name, value] of Object.entries(known.headers)) res.setHeader(name, value);
      const back = area === 'admin' ? '/admin/console' : '/';
      const title =
        status === 403
          ? 'Request refused'
          : status === 404
            ? 'Not found'
            : status === 429
              ? 'Too many attempts'
              : status === 401
                ? 'Logged out'
                : 'Error';
      this.send(res, status, {
        title,
        area,
        narrow: true,
        body: html`<div class="card"><h1>${title}</h1><p>${message}</p><p><a href="${status === 401 ? (area === 'admin' ? '/admin/login' : '/login') : back}">${status === 401 ? 'Log in' : 'Back'}</a></p><p class="small muted">Request id: <code>${String(res.locals.request_id ?? '')}</code></p></div>`,
      });
    };
  }
}

/**
 * Origins one page may load beyond its own (the top-up checkout: the payment provider's script,
 * the frames it opens and the calls it makes); every other page allows none.
 */
export interface PageSources {
  sources?: { script: string[]; frame: string[]; connect: string[] } | undefined;
}

/** Security headers for every dashboard page; no caching of pages that show account data. */
export function setPageHeaders(res: Response, sources?: PageSources['sources']): void {
  const more = (list: string[] | undefined) => (list?.length ? ` ${list.join(' ')}` : '');
  const frames = sources?.frame.length ? `; frame-src ${sources.frame.join(' ')}` : '';
  const connect = sources?.connect.length ? `; connect-src 'self'${more(sources.connect)}` : '';
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'self'; script-src 'self'${more(sources?.script)}; img-src 'self' data:${more(sources?.frame)}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'${frames}${connect}`,
  );
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'same-origin');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cache-Control', 'no-store');
}

/** zod issues → one message per form field (the first issue of each). */
export function formErrors(error: z.ZodError): FormErrors {
  const errors: FormErrors = {};
  for (const issue of error.issues) {
    const field = String(issue.path[0] ?? '_form');
    errors[field] ??= issue.message;
  }
  return errors;
}

/** A local path to return to after login; anything else (other hosts, `//x`) becomes the default. */
export function safeNext(value: unknown, fallback: string): string {
  if (typeof value !== 'string' || value.length > 500) return fallback;
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return fallback;
  return value;
}

export function fieldError(errors: FormErrors | undefined, name: string): Html {
  const message = errors?.[name];
  return message ? html`<p class="error" id="${name}-error">${message}</p>` : html``;
}

/** aria attributes for an input with a possible error. */
export function invalidAttrs(errors: FormErrors | undefined, name: string, hint_id?: string): Html {
  const described = [errors?.[name] ? `${name}-error` : null, hint_id ?? null]
    .filter(Boolean)
    .join(' ');
  return html` aria-invalid="${errors?.[name] ? 'true' : 'false'}"${described ? html` aria-describedby="${described}"` : ''}`;
}
