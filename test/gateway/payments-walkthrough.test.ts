// docs/payments-api.md's "Integrator walk-through" run as written (issue #27): its blocks
// are read from the document, in order, and sent to a real gateway with the sandbox
// providers. `http` blocks are requests in VS Code REST Client's `.http` format (the subset
// the walk-through uses: `@name = value` variables, `# @name` to name a request, `{{name}}`
// and `{{request.response.body.$.path}}`); the `json` block after a request is its answer,
// abridged: every field it shows must be in the real answer with that value, where `…` in a
// string stands for any text. A `json webhook` block is a delivery the webhook receiver must
// get; a `text` block lists lines the (HTML) answer must show. Only the base URL, the key
// and the webhook URL (the document's three variables) are this test's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { json, startUpstream } from '../support/payments-upstream.ts';
import {
  fastSandboxChain,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
  waitFor,
} from '../support/payments-helpers.ts';

const DOC = resolve(import.meta.dirname, '../../docs/payments-api.md');

interface Block {
  lang: string;
  text: string;
}

/** The fenced blocks of the document's section `title`, in order. */
function sectionBlocks(markdown: string, title: string): Block[] {
  const start = markdown.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `the document has a section "${title}"`);
  const rest = markdown.slice(start + title.length + 5);
  const end = rest.search(/\n## /);
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1]!.trim(),
    text: m[2]!,
  }));
}

/** `$.data.plans[0].amount` of a JSON value. */
function jsonPath(value: unknown, path: string): unknown {
  assert.match(
    path,
    /^\$(\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*$/,
    `a JSONPath the test reads: ${path}`,
  );
  let at: any = value;
  for (const [, name, index] of path.slice(1).matchAll(/\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]/g))
    at = at?.[name ?? Number(index)];
  return at;
}

/** `{{name}}` and `{{request.response.body.$.path}}` replaced (a string's value as it is). */
function substitute(
  text: string,
  vars: Map<string, string>,
  answers: Map<string, unknown>,
): string {
  return text.replace(/\{\{\s*([^}]+?)\s*\}\}/g, (_, ref: string) => {
    const response = /^([A-Za-z0-9_-]+)\.response\.body\.(\$.*)$/.exec(ref);
    if (response) {
      assert.ok(answers.has(response[1]!), `a request named ${response[1]} came before`);
      const value = jsonPath(answers.get(response[1]!), response[2]!);
      assert.ok(value !== undefined && value !== null, `${ref} has a value`);
      return String(value);
    }
    assert.ok(vars.has(ref), `a variable ${ref}`);
    return vars.get(ref)!;
  });
}

/** Whether `actual` shows everything `shown` shows (`…` in a shown string: any text). */
function shows(actual: unknown, shown: unknown, path = '$'): string | null {
  if (typeof shown === 'string' && shown.includes('…')) {
    if (actual === undefined || actual === null) return `${path}: missing`;
    const parts = shown.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    return new RegExp(`^${parts.join('[\\s\\S]*')}$`).test(String(actual))
      ? null
      : `${path}: ${JSON.stringify(actual)} is not ${shown}`;
  }
  if (Array.isArray(shown)) {
    if (!Array.isArray(actual)) return `${path}: not a list`;
    for (const [i, item] of shown.entries()) {
      const wrong = shows(actual[i], item, `${path}[${i}]`);
      if (wrong) return wrong;
    }
    return null;
  }
  if (shown !== null && typeof shown === 'object') {
    if (actual === null || typeof actual !== 'object') return `${path}: not an object`;
    for (const [key, value] of Object.entries(shown)) {
      const wrong = shows((actual as Record<string, unknown>)[key], value, `${path}.${key}`);
      if (wrong) return wrong;
    }
    return null;
  }
  return Object.is(actual, shown)
    ? null
    : `${path}: ${JSON.stringify(actual)}, not ${JSON.stringify(shown)}`;
}

/** An `http` block's request: variables set, the name, method, URL, headers and body. */
function parseRequest(text: string, vars: Map<string, string>) {
  const lines = text.split('\n');
  let name: string | null = null;
  let i = 0;
  for (; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || (line.startsWith('#') && !/^#\s*@name\s/.test(line))) continue;
    const named = /^#\s*@name\s+(\S+)$/.exec(line);
    if (named) {
      name = named[1]!;
      continue;
    }
    const variable = /^@([A-Za-z0-9_]+)\s*=\s*(.*)$/.exec(line);
    if (variable) {
      if (!vars.has(variable[1]!)) vars.set(variable[1]!, variable[2]!);
      continue;
    }
    break;
  }
  if (i >= lines.length) return null; // variables only
  const [method, url] = lines[i]!.trim().split(/\s+/);
  const headers: Record<string, string> = {};
  for (i++; i < lines.length && lines[i]!.trim() !== ''; i++) {
    const colon = lines[i]!.indexOf(':');
    headers[lines[i]!.slice(0, colon).trim().toLowerCase()] = lines[i]!.slice(colon + 1).trim();
  }
  const body = lines
    .slice(i + 1)
    .join('\n')
    .trim();
  return { name, method: method!, url: url!, headers, body: body || null };
}

test(
  'the integrator walk-through of docs/payments-api.md runs as written',
  { timeout: 120_000 },
  async () => {
    const blocks = sectionBlocks(readFileSync(DOC, 'utf8'), 'Integrator walk-through');
    assert.ok(
      blocks.filter((b) => b.lang === 'http').length >= 10,
      'the walk-through has its steps',
    );
    const receiver = await startUpstream((_req, res) => json(res, 200, { ok: true }));
    // The sandbox as `npm start` runs it, its bills provider slow to settle, so that the
    // complaint read right after it is registered is still assigned, as the document shows.
    const gw = await startPaymentsGateway(
      paymentsConfig({
        providers: {
          recharge: fastSandboxChain(),
          dmt: fastSandboxChain(),
          pan: fastSandboxChain(),
          bills: fastSandboxChain().map((p) => ({ ...p, pending_ms: 600_000 })),
        },
      }),
    );
    try {
      const { key } = await onboard(gw, 10_000, { recharge: true, bills: true });
      const vars = new Map([
        ['base', gw.url],
        ['key', key],
        ['hook', `${receiver.url}/hook`],
      ]);
      const answers = new Map<string, unknown>();
      let last: { what: string; status: number; body: unknown; text: string } | null = null;
      let requests = 0;
      for (const block of blocks) {
        if (block.lang === 'http') {
          const parsed = parseRequest(block.text, vars);
          if (!parsed) continue;
          const url = substitute(parsed.url, vars, answers);
          const headers = Object.fromEntries(
            Object.entries(parsed.headers).map(([k, v]) => [k, substitute(v, vars, answers)]),
          );
          const body = parsed.body === null ? undefined : substitute(parsed.body, vars, answers);
          const response = await fetch(url, { method: parsed.method, headers, body });
          const text = await response.text();
          let parsed_body: unknown = text;
          try {
            parsed_body = JSON.parse(text);
          } catch {
            // HTML (the receipt)
          }
          const what = `${parsed.method} ${parsed.url}`;
          assert.ok(response.ok, `${what}: ${response.status} ${text.slice(0, 500)}`);
          if (parsed.name) answers.set(parsed.name, parsed_body);
          last = { what, status: response.status, body: parsed_body, text };
          requests++;
        } else if (block.lang === 'json') {
          assert.ok(last, 'an answer follows its request');
          const wrong = shows(last.body, JSON.parse(block.text));
          assert.equal(
            wrong,
            null,
            `${last.what}: ${wrong}\n${JSON.stringify(last.body).slice(0, 2_000)}`,
          );
        } else if (block.lang === 'json webhook') {
          const shown = JSON.parse(block.text);
          await waitFor(
            () => receiver.seen.some((seen) => shows(seen.json, shown) === null),
            () =>
              `no delivery shows ${block.text}; got ${receiver.seen
                .map((seen) => shows(seen.json, shown))
                .join('; ')}`,
          );
        } else if (block.lang === 'text') {
          assert.ok(last, 'a text answer follows its request');
          const page = last.text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ');
          for (const line of block.text.split('\n').filter((l) => l.trim() !== '')) {
            const wrong = shows(page, `…${line.trim()}…`);
            assert.equal(wrong, null, `${last.what} shows "${line.trim()}"`);
          }
        } else {
          assert.fail(`a block the walk-through does not use: ${block.lang}`);
        }
      }
      assert.ok(requests >= 10, `${requests} requests ran`);
      await verifyOk(gw);
    } finally {
      await gw.stop();
      await receiver.close();
    }
  },
);
