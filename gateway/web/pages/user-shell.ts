// The frame of every logged-in user page: navigation, who is logged in, the CSRF token.
import type { Request, Response } from 'express';
import type { Account } from '../../store/state.js';
import type { PageSources, WebContext } from '../context.js';
import type { Html } from '../html.js';
import type { NavItem, Notice } from '../layout.js';
import { sessionBinding, type CurrentSession } from '../sessions.js';

export interface UserRequestState {
  session: CurrentSession;
  account: Account;
  binding: string;
  csrf: string;
}

export async function userState(ctx: WebContext, res: Response): Promise<UserRequestState> {
  const session = res.locals.web_session as CurrentSession;
  const account = ctx.deps.store.get('accounts', session.session.account_id!)!;
  const binding = sessionBinding(session.token_hash);
  return { session, account, binding, csrf: await ctx.sessions.csrfToken(binding) };
}

export function userNav(ctx: WebContext): NavItem[] {
  const items: NavItem[] = [
    { href: '/api-keys', label: 'API keys' },
    { href: '/wallet', label: 'Wallet' },
  ];
  if (ctx.extensions.reports) items.push({ href: '/reports', label: 'Reports' });
  return items;
}

export function sendUserPage(
  ctx: WebContext,
  _req: Request,
  res: Response,
  state: UserRequestState,
  status: number,
  options: { title: string; current: string; body: Html; notice?: Notice | null } & PageSources,
): void {
  ctx.send(res, status, {
    sources: options.sources,
    title: options.title,
    area: 'user',
    current: options.current,
    nav: userNav(ctx),
    who: { label: state.account.email, logout_action: '/logout', csrf: state.csrf },
    notice: options.notice ?? null,
    body: options.body,
  });
}
