// Codex CLI (`@openai/codex`): the Responses API of a custom model provider declared in
// ~/.codex/config.toml, the key read from the variable the provider names. `codex exec
// --json` runs one turn and prints its events as JSON lines.
import { jsonLines, type Agent } from './agent.js';

export const codex: Agent = {
  name: 'codex',
  package: '@openai/codex',
  bin: 'codex',
  protocol: 'responses',
  configure({ origin, key, model }) {
    const config = `model = "${model}"
model_provider = "aihub"
# Off the network: no update check, no curated plugin sync from GitHub and chatgpt.com at
# start-up (it does not change the requests), no usage analytics, no feedback upload.
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.aihub]
name = "AIHub"
base_url = "${origin}/v1"
env_key = "AIHUB_KEY"
wire_api = "responses"
`;
    return {
      env: { AIHUB_KEY: key },
      offline: [], // in config.toml
      files: [{ path: '.codex/config.toml', content: config }],
    };
  },
  args(prompt, { writes }) {
    // --skip-git-repo-check: the run's working dir is not a git repository. workspace-write:
    // the sandbox mode that lets a non-interactive run write in its working dir.
    return [
      'exec',
      '--json',
      '--skip-git-repo-check',
      ...(writes ? ['--sandbox', 'workspace-write'] : []),
      prompt,
    ];
  },
  outcome(stdout) {
    const events = jsonLines(stdout);
    const failed = events.find((e) => e.type === 'turn.failed' || e.type === 'error');
    const completed = events.some((e) => e.type === 'turn.completed');
    const text = events
      .filter((e) => e.type === 'item.completed' && e.item?.type === 'agent_message')
      .map((e) => String(e.item.text ?? ''))
      .join('\n');
    const error = failed ? String(failed.error?.message ?? failed.message ?? 'error') : null;
    return {
      ok: completed && !failed,
      text,
      error: error ?? (completed ? null : 'no turn.completed event'),
    };
  },
};
