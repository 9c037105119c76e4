// The lean lane (/v1) carries its request scope explicitly (kernel/request-scope.ts): each of
// its transactions must pass it, or a commit goes uncounted and a later refusal in the same
// request would say "nothing was changed" when something was. A static check, so that a new
// transaction in the chat room that forgets it fails here rather than in an outage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '../../..');

/** Transactions in the chat room that are no request's, per file, and why. */
const NO_REQUEST: Record<string, { count: number; why: string }> = {
  'gateway/chat/reservations.ts': {
    count: 3,
    why: "lease renewals and lapses (a background pass) and the release at a request's end, not awaited",
  },
};

/** The argument text of each `.transact(` / `.transactThenRead(` call in `source`. */
function transactCalls(source: string): string[] {
  const calls: string[] = [];
  const pattern = /\.(transact|transactThenRead)\(/g;
  for (let match = pattern.exec(source); match; match = pattern.exec(source)) {
    let depth = 1;
    let at = match.index + match[0].length;
    const from = at;
    while (at < source.length && depth > 0) {
      const char = source[at++];
      if (char === '(') depth++;
      else if (char === ')') depth--;
    }
    calls.push(source.slice(from, at - 1));
  }
  return calls;
}

test("every transaction of the chat room passes its request's scope (or is listed as no request's)", () => {
  const files = readdirSync(join(ROOT, 'gateway/chat'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(ROOT, 'gateway/chat', name));
  let seen = 0;
  for (const file of files) {
    const name = relative(ROOT, file);
    const calls = transactCalls(readFileSync(file, 'utf8'));
    seen += calls.length;
    const without = calls.filter((call) => !/\bscope\b/.test(call));
    assert.equal(
      without.length,
      NO_REQUEST[name]?.count ?? 0,
      `${name}: transactions without the request's scope:\n${without.join('\n---\n')}`,
    );
  }
  assert.ok(seen >= 8, `the check found the chat room's transactions (${seen})`);
});

test('the check finds a call without a scope', () => {
  assert.deepEqual(
    transactCalls('a.transact((tx) => f(tx, (1)), { scope: s }); b.transactThenRead(g, h);').map(
      (call) => /\bscope\b/.test(call),
    ),
    [true, false],
  );
});
