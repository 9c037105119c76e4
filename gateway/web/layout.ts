// The page shell: skip link, header with navigation, one <main>, the stylesheet and script.
import { CSS_PATH, JS_PATH, LOGO } from './assets.js';
import { html, raw, type Html } from './html.js';

export interface Notice {
  kind: 'ok' | 'error' | 'info';
  text: string;
}

export interface NavItem {
  href: string;
  label: string;
}

export interface PageOptions {
  title: string;
  body: Html;
  area: 'public' | 'user' | 'admin';
  /** The path of the current navigation item (aria-current). */
  current?: string;
  nav?: NavItem[];
  who?: { label: string; logout_action: string; csrf: string } | null;
  notice?: Notice | null;
  narrow?: boolean;
  mode: 'sandbox' | 'live';
}

export function noticeBox(notice: Notice | null | undefined): Html {
  if (!notice) return html``;
  const role = notice.kind === 'error' ? 'alert' : 'status';
  return html`<div class="notice ${notice.kind}" role="${role}">${notice.text}</div>`;
}

export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

export function page(options: PageOptions): Html {
  const home =
    options.area === 'admin' ? '/admin/console' : options.area === 'user' ? '/api-keys' : '/login';
  const nav = options.nav?.length
    ? html`<nav class="main" aria-label="Main"><ul>${options.nav.map(
        (item) =>
          html`<li><a href="${item.href}"${options.current === item.href ? raw(' aria-current="page"') : ''}>${item.label}</a></li>`,
      )}</ul></nav>`
    : '';
  const who = options.who
    ? html`<div class="who"><span>${options.who.label}</span><form method="post" action="${options.who.logout_action}">${csrfField(options.who.csrf)}<button type="submit" class="secondary small">Log out</button></form></div>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${options.title} · AIHub${options.area === 'admin' ? ' admin' : ''}</title>
<link rel="stylesheet" href="${CSS_PATH}">
<script src="${JS_PATH}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><div class="bar">
<a class="brand" href="${home}">${raw(LOGO)}<span>AIHub</span>${options.area === 'admin' ? html`<span class="badge-admin">Admin</span>` : ''}</a>
${nav}${who}
</div></header>
<main id="main" tabindex="-1"${options.narrow ? raw(' class="narrow"') : ''}>
${noticeBox(options.notice)}
${options.body}
</main>
<footer class="foot" data-mode="${options.mode}">${options.mode === 'sandbox' ? 'Sandbox mode: payments and top-ups are simulated.' : 'Live mode: payments and top-ups are real.'}</footer>
</body>
</html>`;
}
