// opencode (`opencode-ai`): chat completions through the AI SDK's OpenAI-compatible provider,
// declared in opencode.json (here the user's global one, ~/.config/opencode/opencode.json).
// `opencode run --format json` runs one turn and prints its events as JSON lines.
import { jsonLines, type Agent } from './agent.js';

export const opencode: Agent = {
  name: 'opencode',
  package: 'opencode-ai',
  bin: 'opencode',
  protocol: 'chat',
  configure({ origin, key, model, small_model }) {
    const config = {
      $schema: 'https://opencode.ai/config.json',
      provider: {
        aihub: {
          npm: '@ai-sdk/openai-compatible',
          name: 'AIHub',
          options: { baseURL: `${origin}/v1`, apiKey: '{env:AIHUB_KEY}' },
          models: { [model]: {}, [small_model]: {} },
        },
      },
      model: `aihub/${model}`,
      small_model: `aihub/${small_model}`,
      autoupdate: false,
      share: 'disabled',
    };
    return {
      env: {
        AIHUB_KEY: key,
        // Off the network: no models.dev catalog (the copy built into the binary serves), no
        // update check, no sharing, no language-server downloads.
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_SHARE: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        // opencode installs its plugin SDK into each config dir with npm at start-up; offline,
        // npm looks only in its cache and the install fails quietly (plugins are not used here).
        npm_config_offline: 'true',
      },
      files: [
        { path: '.config/opencode/opencode.json', content: `${JSON.stringify(config, null, 2)}\n` },
      ],
    };
  },
  args(prompt) {
    // opencode's default permissions let a run write files in its working dir.
    return ['run', '--format', 'json', prompt];
  },
  outcome(stdout) {
    const events = jsonLines(stdout);
    const failed = events.find((e) => e.type === 'error');
    const text = events
      .filter((e) => e.type === 'text')
      .map((e) => String(e.part?.text ?? ''))
      .join('');
    const error = failed
      ? String(failed.error?.data?.message ?? failed.error?.name ?? JSON.stringify(failed.error))
      : null;
    return { ok: !failed && events.length > 0, text, error };
  },
};
