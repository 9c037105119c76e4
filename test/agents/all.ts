// Every agent the agents level runs (the fixtures' recorder walks this list too).
import type { Agent } from './agent.js';
import { claudeCode } from './claude-code.js';
import { codex } from './codex.js';
import { geminiCli } from './gemini-cli.js';
import { opencode } from './opencode.js';

export const AGENTS: readonly Agent[] = [claudeCode, codex, opencode, geminiCli];

export function agentNamed(name: string): Agent {
  const agent = AGENTS.find((a) => a.name === name);
  if (!agent) throw new Error(`no agent ${name}; known: ${AGENTS.map((a) => a.name).join(', ')}`);
  return agent;
}
