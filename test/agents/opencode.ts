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
      env: { AIHUB_KEY: key },
      offline: [
        {
          name: 'OPENCODE_DISABLE_MODELS_FETCH',
          value: '1',
          why: 'no models.dev catalog download (the copy built into opencode serves)',
        },
        { name: 'OPENCODE_DISABLE_AUTOUPDATE', value: '1', why: 'no update check' },
        { name: 'OPENCODE_DISABLE_SHARE', value: '1', why: 'no session sharing' },
        { name: 'OPENCODE_DISABLE_LSP_DOWNLOAD', value: '1', why: 'no language-server downloads' },
      ],
      files: [
        { path: '.config/opencode/opencode.json', content: `${JSON.stringify(config, null, 2)}\n` },
        {
          // At start-up opencode installs its plugin SDK into each config dir with its own npm,
          // which reads this dir's .npmrc: offline, it only looks in npm's cache and the
          // install fails quietly (no plugin is used here).
          path: '.config/opencode/.npmrc',
          content: '; opencode: no plugin SDK download from the npm registry\noffline=true\n',
        },
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
