// Claude Code (`@anthropic-ai/claude-code`): Anthropic's Messages API at ANTHROPIC_BASE_URL
// (it adds /v1/messages), the key as a bearer token. `claude -p` runs one turn; with
// `--output-format json` it prints one result object.
import type { Agent } from './agent.js';

export const claudeCode: Agent = {
  name: 'claude-code',
  package: '@anthropic-ai/claude-code',
  bin: 'claude',
  protocol: 'messages',
  configure({ origin, key, model, small_model }) {
    return {
      env: {
        ANTHROPIC_BASE_URL: origin,
        ANTHROPIC_AUTH_TOKEN: key, // sent as Authorization: Bearer
        ANTHROPIC_MODEL: model,
        // The model aliases Claude Code and its subagents use, so that none names a model
        // the gateway does not have.
        ANTHROPIC_DEFAULT_OPUS_MODEL: model,
        ANTHROPIC_DEFAULT_SONNET_MODEL: model,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: small_model,
      },
      offline: [
        {
          name: 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC',
          value: '1',
          why: 'no telemetry, error reports, feature flags or connectivity check',
        },
        { name: 'DISABLE_TELEMETRY', value: '1', why: 'no usage telemetry' },
        { name: 'DISABLE_ERROR_REPORTING', value: '1', why: 'no error reports' },
        { name: 'DISABLE_AUTOUPDATER', value: '1', why: 'no update check' },
        {
          name: 'CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL',
          value: '1',
          why: 'no plugin marketplace download',
        },
      ],
      files: [],
    };
  },
  args(prompt, { writes }) {
    // acceptEdits: the permission a non-interactive run needs to write a file.
    return [
      '-p',
      prompt,
      '--output-format',
      'json',
      ...(writes ? ['--permission-mode', 'acceptEdits'] : []),
    ];
  },
  outcome(stdout) {
    let result: any;
    try {
      result = JSON.parse(stdout.trim().split('\n').at(-1) ?? '');
    } catch {
      return { ok: false, text: '', error: `no JSON result on stdout: ${stdout.slice(0, 500)}` };
    }
    const ok = result?.type === 'result' && result.subtype === 'success' && !result.is_error;
    const text = typeof result?.result === 'string' ? result.result : '';
    return { ok, text, error: ok ? null : text || JSON.stringify(result).slice(0, 1000) };
  },
};
