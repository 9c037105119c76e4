// docs/chat-api.md shows each coding agent's setup exactly as the agents level runs it
// (test/agents/docs.ts renders it from the same configure()).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { AGENTS } from '../agents/all.js';
import { setupMarkdown } from '../agents/docs.js';

const DOC = resolve(import.meta.dirname, '../../docs/chat-api.md');

for (const agent of AGENTS) {
  test(`docs/chat-api.md shows the tested setup of ${agent.name}`, () => {
    const doc = readFileSync(DOC, 'utf8');
    const expected = setupMarkdown(agent);
    assert.ok(
      doc.includes(expected),
      `docs/chat-api.md lacks ${agent.name}'s setup as tested; paste the output of \`node --import tsx test/agents/docs.ts\`:\n${expected}`,
    );
  });
}
