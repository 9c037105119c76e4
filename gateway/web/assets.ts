// The dashboard's only stylesheet and script, served from the gateway itself (no CDN), so the
// pages work offline and a strict Content-Security-Policy (script-src 'self') holds.
import { createHash } from 'node:crypto';

export const CSS = `
:root {
  color-scheme: light dark;
  --bg: #f6f7f9; --surface: #ffffff; --surface-2: #f0f2f5; --text: #1b1f24; --muted: #57606a;
  --border: #d0d7de; --accent: #0b57d0; --accent-text: #ffffff; --accent-soft: #e8f0fe;
  --danger: #b42318; --danger-soft: #fdecea; --ok: #146c2e; --ok-soft: #e6f4ea; --warn: #8a5300; --warn-soft: #fff4e0;
  --focus: #0b57d0; --shadow: 0 1px 2px rgba(0,0,0,.06), 0 1px 3px rgba(0,0,0,.08);
  --tier-free: #8c959f; --tier-lite: #2da44e; --tier-standard: #0969da; --tier-pro: #8250df; --tier-max: #cf222e; --tier-other: #bf8700;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --surface: #161b22; --surface-2: #1f2630; --text: #e6edf3; --muted: #9da7b3;
    --border: #30363d; --accent: #4c8dff; --accent-text: #0d1117; --accent-soft: #15233d;
    --danger: #ff7b72; --danger-soft: #3a1614; --ok: #56d364; --ok-soft: #12301b; --warn: #e3b341; --warn-soft: #332607;
    --focus: #79b8ff; --shadow: none;
    --tier-free: #8b949e; --tier-lite: #3fb950; --tier-standard: #58a6ff; --tier-pro: #bc8cff; --tier-max: #ff7b72; --tier-other: #d29922;
  }
}
*, *::before, *::after { box-sizing: border-box; }
html { font-size: 100%; }
body { margin: 0; background: var(--bg); color: var(--text); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; }
a { color: var(--accent); }
a:hover { text-decoration-thickness: 2px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; border-radius: 4px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--surface); padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; top: .5rem; }
header.top { background: var(--surface); border-bottom: 1px solid var(--border); }
header.top .bar { max-width: 1100px; margin: 0 auto; padding: .6rem 1.25rem; display: flex; align-items: center; gap: 1.5rem; flex-wrap: wrap; }
.brand { font-weight: 700; font-size: 1.1rem; color: var(--text); text-decoration: none; display: inline-flex; align-items: center; gap: .45rem; }
.brand svg { width: 22px; height: 22px; }
.badge-admin { font-size: .72rem; font-weight: 600; text-transform: uppercase; letter-spacing: .04em; background: var(--warn-soft); color: var(--warn); border-radius: 999px; padding: .1rem .5rem; }
nav.main ul { list-style: none; margin: 0; padding: 0; display: flex; gap: .25rem; flex-wrap: wrap; }
nav.main a { display: block; padding: .4rem .7rem; border-radius: 6px; color: var(--muted); text-decoration: none; font-weight: 500; }
nav.main a:hover { background: var(--surface-2); color: var(--text); }
nav.main a[aria-current="page"] { background: var(--accent-soft); color: var(--accent); }
.who { margin-left: auto; display: flex; align-items: center; gap: .75rem; color: var(--muted); font-size: .9rem; }
.who form { margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem 1.25rem 3rem; }
main.narrow { max-width: 440px; padding-top: 3rem; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.15rem; margin: 0 0 .75rem; }
p.lead { color: var(--muted); margin: 0 0 1.5rem; }
.card { background: var(--surface); border: 1px solid var(--border); border-radius: 10px; padding: 1.25rem; margin-bottom: 1.25rem; box-shadow: var(--shadow); }
.grid { display: grid; gap: 1.25rem; grid-template-columns: repeat(auto-fit, minmax(280px, 1fr)); }
.stat { font-size: 2rem; font-weight: 700; letter-spacing: -.01em; font-variant-numeric: tabular-nums; }
.muted { color: var(--muted); }
.small { font-size: .875rem; }
label { display: block; font-weight: 600; margin-bottom: .3rem; }
.hint { display: block; font-weight: 400; color: var(--muted); font-size: .85rem; margin-top: .2rem; }
input[type=text], input[type=email], input[type=password], input[type=number], input[type=search], input[type=date], select, textarea {
  width: 100%; padding: .55rem .7rem; font: inherit; color: var(--text); background: var(--bg); border: 1px solid var(--border); border-radius: 6px;
}
textarea { min-height: 6rem; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
input[aria-invalid=true] { border-color: var(--danger); }
.field { margin-bottom: 1rem; }
.field .error { color: var(--danger); font-size: .875rem; margin-top: .25rem; }
.row { display: flex; gap: .75rem; align-items: flex-end; flex-wrap: wrap; }
.row .field { flex: 1 1 180px; margin-bottom: 0; }
.checks { display: flex; gap: 1.25rem; flex-wrap: wrap; margin: 0 0 1rem; padding: 0; border: 0; }
.checks legend { font-weight: 600; margin-bottom: .4rem; padding: 0; }
.checks label { display: inline-flex; align-items: center; gap: .4rem; font-weight: 500; margin: 0; }
button, .button { display: inline-flex; align-items: center; justify-content: center; gap: .4rem; padding: .55rem 1rem; font: inherit; font-weight: 600; border-radius: 6px; border: 1px solid transparent; cursor: pointer; text-decoration: none; background: var(--accent); color: var(--accent-text); }
button:hover, .button:hover { filter: brightness(1.08); }
button.secondary, .button.secondary { background: var(--surface-2); color: var(--text); border-color: var(--border); }
button.danger { background: transparent; color: var(--danger); border-color: var(--danger); }
button.danger:hover { background: var(--danger-soft); }
button.link { background: none; border: 0; color: var(--accent); padding: 0; font-weight: 500; text-decoration: underline; }
button.small, .button.small { padding: .3rem .65rem; font-size: .875rem; }
button.wide { width: 100%; }
.table-wrap { overflow-x: auto; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding-bottom: .5rem; }
th, td { text-align: left; padding: .55rem .6rem; border-bottom: 1px solid var(--border); vertical-align: top; }
thead th { font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); font-weight: 600; }
tbody th { font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
td.plus { color: var(--ok); }
td.minus { color: var(--text); }
tr.revoked td { color: var(--muted); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
.pill { display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .78rem; font-weight: 600; background: var(--surface-2); color: var(--muted); border: 1px solid var(--border); }
.pill.ok { background: var(--ok-soft); color: var(--ok); border-color: transparent; }
.pill.warn { background: var(--warn-soft); color: var(--warn); border-color: transparent; }
.pill.bad { background: var(--danger-soft); color: var(--danger); border-color: transparent; }
.notice { border-radius: 8px; padding: .75rem 1rem; margin-bottom: 1.25rem; border: 1px solid transparent; }
.notice.ok { background: var(--ok-soft); color: var(--ok); }
.notice.error { background: var(--danger-soft); color: var(--danger); }
.notice.info { background: var(--accent-soft); color: var(--text); }
.secret { display: flex; gap: .5rem; align-items: stretch; flex-wrap: wrap; margin: .75rem 0; }
.secret output { flex: 1 1 320px; display: block; padding: .6rem .75rem; background: var(--bg); border: 1px dashed var(--accent); border-radius: 6px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; word-break: break-all; user-select: all; }
.empty { text-align: center; padding: 2rem 1rem; color: var(--muted); }
.pager { display: flex; gap: .75rem; align-items: center; justify-content: flex-end; margin-top: .75rem; }
.chart svg { width: 100%; height: auto; display: block; }
.chart .axis { stroke: var(--border); stroke-width: 1; }
.chart .gridline { stroke: var(--border); stroke-width: 1; stroke-dasharray: 2 3; }
.chart text { fill: var(--muted); font-size: 11px; font-family: inherit; }
.legend { display: flex; gap: 1rem; flex-wrap: wrap; list-style: none; padding: 0; margin: .5rem 0 0; font-size: .85rem; color: var(--muted); }
.legend li { display: inline-flex; align-items: center; gap: .35rem; }
.swatch { width: .8rem; height: .8rem; border-radius: 2px; display: inline-block; }
.tier-free { fill: var(--tier-free); background: var(--tier-free); }
.tier-lite { fill: var(--tier-lite); background: var(--tier-lite); }
.tier-standard { fill: var(--tier-standard); background: var(--tier-standard); }
.tier-pro { fill: var(--tier-pro); background: var(--tier-pro); }
.tier-max { fill: var(--tier-max); background: var(--tier-max); }
.tier-other { fill: var(--tier-other); background: var(--tier-other); }
details summary { cursor: pointer; color: var(--accent); margin-top: .75rem; }
.mt { margin-top: 1rem; }
.presets { display: flex; gap: .5rem; flex-wrap: wrap; margin-bottom: 1rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
footer.foot { max-width: 1100px; margin: 0 auto; padding: 0 1.25rem 2rem; color: var(--muted); font-size: .8rem; }
.visually-hidden { position: absolute !important; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (max-width: 640px) { .who { margin-left: 0; width: 100%; } h1 { font-size: 1.35rem; } }
@media (prefers-reduced-motion: no-preference) { button, .button, nav.main a { transition: background-color .12s, filter .12s; } }
`;

// Progressive enhancement only: every page works without it.
export const JS = `
'use strict';
document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  const status = document.getElementById(button.getAttribute('data-copy-status'));
  if (!source) return;
  const text = source.textContent.trim();
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    copied = document.execCommand && document.execCommand('copy');
  }
  if (status) status.textContent = copied ? 'Copied to the clipboard.' : 'Selected: press Ctrl+C (or Cmd+C) to copy.';
  button.textContent = copied ? 'Copied' : 'Copy';
});
document.addEventListener('submit', (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.getAttribute('data-confirm') : null;
  if (question && !window.confirm(question)) event.preventDefault();
});
document.querySelectorAll('[data-copy]').forEach((button) => { button.hidden = false; });
`;

const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);
export const CSS_PATH = `/assets/app-${version(CSS)}.css`;
export const JS_PATH = `/assets/app-${version(JS)}.js`;

export const LOGO = `<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><rect x="2" y="2" width="20" height="20" rx="6" fill="currentColor" opacity=".14"/><path d="M7 17l5-10 5 10M9.2 13h5.6" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"/></svg>`;
