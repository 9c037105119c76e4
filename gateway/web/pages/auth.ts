// Sign-up, log-in and log-out of dashboard users.
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { createAccount } from '../../accounts/accounts.js';
import { ApiError } from '../../http/errors.js';
import { audit } from '../audit.js';
import {
  fieldError,
  formErrors,
  invalidAttrs,
  safeNext,
  type FormErrors,
  type WebContext,
} from '../context.js';
import { html } from '../html.js';
import { csrfField, type Notice } from '../layout.js';
import { hashPassword, verifyPassword } from '../../accounts/password.js';
import { sessionBinding } from '../sessions.js';
import { newId } from '../../util/ids.js';

export const PASSWORD_MIN = 10;

const emailField = z
  .string()
  .trim()
  .toLowerCase()
  .max(254, 'Use at most 254 characters')
  .pipe(z.email('Enter a valid email address'));

export const signupForm = z
  .object({
    name: z.string().trim().min(1, 'Enter your name').max(200, 'Use at most 200 characters'),
    email: emailField,
    password: z
      .string()
      .min(PASSWORD_MIN, `Use at least ${PASSWORD_MIN} characters`)
      .max(200, 'Use at most 200 characters'),
    password_confirm: z.string().max(200),
  })
  .refine((form) => form.password === form.password_confirm, {
    path: ['password_confirm'],
    message: 'The two passwords do not match',
  });

export const loginForm = z.object({
  email: emailField,
  password: z.string().min(1, 'Enter your password').max(200, 'Use at most 200 characters'),
  next: z.string().max(500).optional(),
});

interface FormState {
  csrf: string;
  values?: Record<string, string>;
  errors?: FormErrors;
  notice?: Notice | null;
  next?: string;
}

function signupPage(state: FormState) {
  const v = state.values ?? {};
  const e = state.errors;
  return html`<h1>Create your account</h1>
<p class="lead">One key and one wallet for the AI and payments APIs.</p>
<div class="card">
<form method="post" action="/signup" novalidate>
${csrfField(state.csrf)}
<div class="field"><label for="name">Name</label><input id="name" name="name" type="text" autocomplete="name" required maxlength="200" value="${v.name ?? ''}"${invalidAttrs(e, 'name')}>${fieldError(e, 'name')}</div>
<div class="field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${v.email ?? ''}"${invalidAttrs(e, 'email')}>${fieldError(e, 'email')}</div>
<div class="field"><label for="password">Password<span class="hint" id="password-hint">At least ${PASSWORD_MIN} characters. A passphrase of a few words is good.</span></label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${PASSWORD_MIN}" maxlength="200"${invalidAttrs(e, 'password', 'password-hint')}>${fieldError(e, 'password')}</div>
<div class="field"><label for="password_confirm">Repeat the password</label><input id="password_confirm" name="password_confirm" type="password" autocomplete="new-password" required maxlength="200"${invalidAttrs(e, 'password_confirm')}>${fieldError(e, 'password_confirm')}</div>
<button type="submit" class="wide">Create account</button>
</form>
</div>
<p class="muted">Have an account? <a href="/login">Log in</a>.</p>`;
}

function loginPage(state: FormState) {
  const v = state.values ?? {};
  const e = state.errors;
  return html`<h1>Log in</h1>
<p class="lead">to manage your API keys and wallet.</p>
<div class="card">
<form method="post" action="/login" novalidate>
${csrfField(state.csrf)}
${state.next ? html`<input type="hidden" name="next" value="${state.next}">` : ''}
<div class="field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${v.email ?? ''}"${invalidAttrs(e, 'email')}>${fieldError(e, 'email')}</div>
<div class="field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required maxlength="200"${invalidAttrs(e, 'password')}>${fieldError(e, 'password')}</div>
<button type="submit" class="wide">Log in</button>
</form>
</div>
<p class="muted">New here? <a href="/signup">Create an account</a>.</p>`;
}

function tooMany(retry_after_s: number): ApiError {
  const minutes = Math.ceil(retry_after_s / 60);
  return new ApiError(
    429,
    'too_many_attempts',
    `Too many attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
    null,
    null,
    {
      'Retry-After': String(retry_after_s),
    },
  );
}

export function authRoutes(ctx: WebContext, router: Router): void {
  router.get('/', (req, res) => {
    res.redirect(303, ctx.sessions.current(req, 'user') ? '/api-keys' : '/login');
  });
  signupRoutes(ctx, router);
  loginRoutes(ctx, router);
}

/** GET and POST /signup: a new account (sign-ups per address are limited), logged in at once. */
function signupRoutes(ctx: WebContext, router: Router): void {
  const { store } = ctx.deps;
  const renderSignup = async (
    req: Request,
    res: Response,
    status: number,
    state: Omit<FormState, 'csrf'>,
  ) => {
    const csrf = await ctx.sessions.csrfToken(ctx.sessions.anonBinding(req, res));
    ctx.send(res, status, {
      title: 'Sign up',
      area: 'public',
      narrow: true,
      notice: state.notice,
      body: signupPage({ ...state, csrf }),
    });
  };

  router.get('/signup', async (req, res) => {
    if (ctx.sessions.current(req, 'user')) return res.redirect(303, '/api-keys');
    await renderSignup(req, res, 200, {});
  });

  router.post('/signup', ...ctx.anonPostGuard(), async (req, res) => {
    const body = (req.body ?? {}) as Record<string, string>;
    const values = { name: String(body.name ?? ''), email: String(body.email ?? '') };
    const parsed = signupForm.safeParse(body);
    if (!parsed.success)
      return renderSignup(req, res, 422, { values, errors: formErrors(parsed.error) });
    const ip = ctx.clientIp(req);
    // Counted as it is admitted (one step, before the hash awaits): parallel sign-ups each take a slot.
    const admitted = ctx.signup_by_ip.take(ip, ctx.nowMs());
    if (!admitted.ok) throw tooMany(admitted.retry_after_s);
    const password_hash = await hashPassword(parsed.data.password);
    let started: { token: string; token_hash: string };
    const id = newId('acc'); // drawn once: every run of the transaction reads the same keys
    try {
      started = await store.transact((tx) => {
        const account = createAccount(tx, {
          id,
          email: parsed.data.email,
          name: parsed.data.name,
          password_hash,
          payment_services: ctx.deps.payments?.services.map((service) => service.code),
        });
        audit(tx, {
          actor: `user:${account.id}`,
          action: 'signup',
          account_id: account.id,
          detail: account.email,
          ip,
        });
        return ctx.sessions.startInTx(tx, 'user', account.id);
      });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'email_taken') {
        return renderSignup(req, res, 409, {
          values,
          errors: { email: 'An account with this email exists already. Log in instead.' },
        });
      }
      throw error;
    }
    ctx.sessions.setSessionCookie(req, res, 'user', started.token);
    ctx.setFlash(sessionBinding(started.token_hash), {
      kind: 'ok',
      text: 'Your account is ready. Create an API key to start.',
    });
    res.redirect(303, '/api-keys');
  });
}

/** GET and POST /login (failures limited per email and per address), POST /logout. */
function loginRoutes(ctx: WebContext, router: Router): void {
  const renderLogin = loginRenderer(ctx);

  router.get('/login', async (req, res) => {
    const next = safeNext(req.query.next, '/api-keys');
    if (ctx.sessions.current(req, 'user')) return res.redirect(303, next);
    await renderLogin(req, res, 200, { next: next === '/api-keys' ? undefined : next });
  });

  router.post('/login', ...ctx.anonPostGuard(), loginPost(ctx, renderLogin));

  router.post('/logout', ctx.form, async (req, res) => {
    const current = ctx.sessions.current(req, 'user');
    if (current) await ctx.checkCsrf(req, sessionBinding(current.token_hash));
    await ctx.sessions.end(req, res, 'user', current);
    res.redirect(303, '/login');
  });
}

type RenderLogin = ReturnType<typeof loginRenderer>;

/** Renders the login page with a fresh CSRF token for the anonymous session. */
function loginRenderer(ctx: WebContext) {
  return async (req: Request, res: Response, status: number, state: Omit<FormState, 'csrf'>) => {
    const csrf = await ctx.sessions.csrfToken(ctx.sessions.anonBinding(req, res));
    ctx.send(res, status, {
      title: 'Log in',
      area: 'public',
      narrow: true,
      notice: state.notice,
      body: loginPage({ ...state, csrf }),
    });
  };
}

/** The notice for an email or address that failed too often. */
function throttled(wait_s: number): Notice {
  const minutes = Math.ceil(wait_s / 60);
  return {
    kind: 'error',
    text: `Too many failed attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
  };
}

/**
 * One slot of each failure limit (per email, per address) for a login attempt, taken now;
 * `release` gives both back. When either limit is reached nothing is taken: the wait instead.
 */
function claimLoginSlots(
  ctx: WebContext,
  email: string,
  ip: string,
): { release(): void } | { wait_s: number } {
  const now_ms = ctx.nowMs();
  const by_email = ctx.login_by_email.claim(email, now_ms);
  const by_ip = ctx.login_by_ip.claim(ip, now_ms);
  if (by_email.ok && by_ip.ok)
    return {
      release() {
        by_email.release();
        by_ip.release();
      },
    };
  by_email.release();
  by_ip.release();
  return { wait_s: Math.max(by_email.retry_after_s, by_ip.retry_after_s) };
}

/** POST /login: validate, throttle, check the password and the account, then start a session. */
function loginPost(ctx: WebContext, renderLogin: RenderLogin) {
  const { store } = ctx.deps;
  return async (req: Request, res: Response) => {
    const body = (req.body ?? {}) as Record<string, string>;
    const values = { email: String(body.email ?? '') };
    const next = safeNext(body.next, '/api-keys');
    const next_field = next === '/api-keys' ? undefined : next;
    const parsed = loginForm.safeParse(body);
    if (!parsed.success)
      return renderLogin(req, res, 422, {
        values,
        errors: formErrors(parsed.error),
        next: next_field,
      });
    const ip = ctx.clientIp(req);
    // The attempt's slots are taken before the password is checked (scrypt awaits): parallel
    // guesses each take one, so no more are evaluated than the limit allows. A right password
    // gives them back.
    const slots = claimLoginSlots(ctx, parsed.data.email, ip);
    if ('wait_s' in slots) {
      res.setHeader('Retry-After', String(slots.wait_s));
      return renderLogin(req, res, 429, {
        values,
        next: next_field,
        notice: throttled(slots.wait_s),
      });
    }
    const account_id = store.get('emails', parsed.data.email);
    const account = account_id ? store.get('accounts', account_id) : undefined;
    const ok = await verifyPassword(parsed.data.password, account?.password_hash ?? null);
    if (!ok || !account) {
      ctx.deps.logger.warn({
        msg: 'dashboard login failed',
        request_id: res.locals.request_id,
        ip,
      });
      return renderLogin(req, res, 401, {
        values,
        next: next_field,
        notice: { kind: 'error', text: 'The email or the password is not correct.' },
      });
    }
    slots.release();
    if (account.status !== 'active') {
      return renderLogin(req, res, 403, {
        values,
        next: next_field,
        notice: {
          kind: 'error',
          text: 'This account is disabled. Contact the operator of this service.',
        },
      });
    }
    ctx.login_by_email.reset(parsed.data.email);
    const started = await store.transact((tx) => {
      audit(tx, { actor: `user:${account.id}`, action: 'login', account_id: account.id, ip });
      return ctx.sessions.startInTx(tx, 'user', account.id);
    });
    ctx.sessions.setSessionCookie(req, res, 'user', started.token);
    res.redirect(303, next);
  };
}
