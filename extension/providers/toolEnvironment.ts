// The lines that point the developer's other AI tools at the local gateway: Claude Code, Codex
// CLI, opencode and Gemini CLI, as docs/chat-api.md's "Coding agents" section (tested against
// the real tools in test/agents/) sets them up. Pure, unit-tested.

export const TOOLS = ['claude-code', 'codex', 'opencode', 'gemini-cli'] as const;
export type Tool = (typeof TOOLS)[number];

export const TOOL_LABELS: Record<Tool, string> = {
  'claude-code': 'Claude Code',
  codex: 'Codex CLI',
  opencode: 'opencode',
  'gemini-cli': 'Gemini CLI',
};

const STRONG = 'service-ai-pro-4';
const FAST = 'service-ai-lite';

/** `root`: the gateway without `/v1` (http://127.0.0.1:8788). The key is written as given. */
export function toolSetup(tool: Tool, root: string, key: string): string {
  switch (tool) {
    case 'claude-code':
      return [
        '# Claude Code (Anthropic Messages API)',
        `export ANTHROPIC_BASE_URL=${root}`,
        `export ANTHROPIC_AUTH_TOKEN=${key}`,
        `export ANTHROPIC_MODEL=${STRONG}`,
        `export ANTHROPIC_DEFAULT_OPUS_MODEL=${STRONG}`,
        `export ANTHROPIC_DEFAULT_SONNET_MODEL=${STRONG}`,
        `export ANTHROPIC_DEFAULT_HAIKU_MODEL=${FAST}`,
      ].join('\n');
    case 'codex':
      return [
        '# Codex CLI (Responses API): the key in the shell,',
        `export AIHUB_KEY=${key}`,
        '# and in ~/.codex/config.toml:',
        `#   model = "${STRONG}"`,
        '#   model_provider = "aihub"',
        '#   [model_providers.aihub]',
        '#   name = "AIHub"',
        `#   base_url = "${root}/v1"`,
        '#   env_key = "AIHUB_KEY"',
        '#   wire_api = "responses"',
      ].join('\n');
    case 'opencode':
      return [
        '# opencode (chat completions): the key in the shell,',
        `export AIHUB_KEY=${key}`,
        '# and in ~/.config/opencode/opencode.json:',
        `#   {"provider": {"aihub": {"npm": "@ai-sdk/openai-compatible", "name": "AIHub",`,
        `#     "options": {"baseURL": "${root}/v1", "apiKey": "{env:AIHUB_KEY}"},`,
        `#     "models": {"${STRONG}": {}, "${FAST}": {}}}},`,
        `#    "model": "aihub/${STRONG}", "small_model": "aihub/${FAST}"}`,
      ].join('\n');
    case 'gemini-cli':
      return [
        '# Gemini CLI (Gemini API; choose "Use Gemini API key" at its first start)',
        `export GOOGLE_GEMINI_BASE_URL=${root}`,
        `export GEMINI_API_KEY=${key}`,
        `export GEMINI_MODEL=${STRONG}`,
      ].join('\n');
  }
}

export function allToolSetups(root: string, key: string): string {
  return TOOLS.map((tool) => toolSetup(tool, root, key)).join('\n\n');
}

export function isTool(value: unknown): value is Tool {
  return typeof value === 'string' && (TOOLS as readonly string[]).includes(value);
}
