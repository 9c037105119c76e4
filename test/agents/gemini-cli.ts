// Gemini CLI (`@google/gemini-cli`): Google's Gemini API with API-key auth, its base URL from
// GOOGLE_GEMINI_BASE_URL, the key from GEMINI_API_KEY, the auth type chosen once in
// ~/.gemini/settings.json (as the CLI's first interactive run saves it). `gemini -p ...
// --output-format json` runs one turn and prints one JSON object.
import type { Agent } from './agent.js';

export const geminiCli: Agent = {
  name: 'gemini-cli',
  package: '@google/gemini-cli',
  bin: 'gemini',
  protocol: 'gemini',
  configure({ origin, key, model }) {
    const settings = {
      security: { auth: { selectedType: 'gemini-api-key' } },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
    };
    return {
      env: {
        GOOGLE_GEMINI_BASE_URL: origin,
        GEMINI_API_KEY: key,
        GEMINI_MODEL: model,
        // A non-interactive run trusts no folder on its own (exit 55): the documented
        // setting for headless use.
        GEMINI_CLI_TRUST_WORKSPACE: 'true',
      },
      offline: [], // in settings.json: no update check, no usage statistics, no telemetry
      files: [{ path: '.gemini/settings.json', content: `${JSON.stringify(settings, null, 2)}\n` }],
    };
  },
  args(prompt, { writes }) {
    // --approval-mode yolo: without it a non-interactive run offers the model no tool that
    // writes (write_file, replace, run_shell_command).
    return [
      '-p',
      prompt,
      '--output-format',
      'json',
      ...(writes ? ['--approval-mode', 'yolo'] : []),
    ];
  },
  outcome(stdout) {
    const result = jsonObject(stdout.slice(Math.max(0, stdout.indexOf('{'))));
    if (!result) return { ok: false, text: '', error: 'no JSON result on stdout' };
    const failure = result.error as { message?: unknown } | undefined;
    const error = failure ? String(failure.message ?? 'error') : null;
    const text = typeof result.response === 'string' ? result.response : '';
    return { ok: !error && typeof result.response === 'string', text, error };
  },
};

function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
