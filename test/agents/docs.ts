// The tested setup of each agent as docs/chat-api.md shows it ("Coding agents"): the same
// configure() the agents level runs, for a gateway on its default address and a key in
// $AIHUB_KEY. test/unit/agents-docs.test.ts keeps the docs equal to it; run this file to
// print the blocks (`node --import tsx test/agents/docs.ts`).
import type { Agent } from './agent.js';
import { AGENTS } from './all.js';

export const DOCS_SETUP = {
  origin: 'http://127.0.0.1:8787',
  key: '$AIHUB_KEY',
  model: 'service-ai-pro-4',
  small_model: 'service-ai-lite',
  home: '~',
};

/** The Markdown blocks of one agent's setup: its environment, then each config file. */
export function setupMarkdown(agent: Agent): string {
  const config = agent.configure(DOCS_SETUP);
  const exports = Object.entries(config.env)
    .filter(([name, value]) => value !== `$${name}`) // AIHUB_KEY=$AIHUB_KEY says nothing
    .map(([name, value]) => `export ${name}=${value}`);
  const offline = config.offline.map(({ name, value, why }) => `export ${name}=${value}  # ${why}`);
  const blocks: string[] = [];
  if (exports.length) blocks.push(['```sh', ...exports, '```'].join('\n'));
  if (offline.length)
    blocks.push(
      [
        'Off the network (telemetry, update checks, catalogs), as the tests run it:',
        '',
        '```sh',
        ...offline,
        '```',
      ].join('\n'),
    );
  for (const file of config.files) {
    const language = file.path.endsWith('.toml')
      ? 'toml'
      : file.path.endsWith('.json')
        ? 'json'
        : '';
    blocks.push(`\`~/${file.path}\`:\n\n\`\`\`${language}\n${file.content.trimEnd()}\n\`\`\``);
  }
  return blocks.join('\n\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const agent of AGENTS) console.log(`### ${agent.name}\n\n${setupMarkdown(agent)}\n`);
}
