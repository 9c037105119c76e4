// What the agents level needs to know about one coding agent: where its binary is, how a user
// points it at a gateway, how to run one non-interactive turn and how to read its result. Each
// agent is one such module (claude-code.ts, codex.ts, opencode.ts); adding one (Gemini CLI) is
// one more module, one line in all.ts and a three-line test file.

/** The wire protocols of the gateway an agent may speak (for replaying its recorded requests). */
export type AgentProtocol = 'messages' | 'responses' | 'chat' | 'gemini';

/** Where and against what one run of an agent happens. */
export interface AgentSetup {
  /** The gateway's origin, `http://127.0.0.1:PORT` (no path): each agent adds what it needs. */
  origin: string;
  key: string;
  /** The tier the agent works with. */
  model: string;
  /** The tier for the agent's side requests (titles, summaries), where it has such a setting. */
  small_model: string;
  /** The run's HOME (a temp dir): the agent's config files go here. */
  home: string;
}

/** A user's setup of the agent: environment variables and config files (paths relative to HOME). */
export interface AgentConfig {
  /** What points it at the gateway: base URL, key, model. */
  env: Record<string, string>;
  /** Settings that keep it off the network (telemetry, update checks, catalogs), with why. */
  offline: Array<{ name: string; value: string; why: string }>;
  files: Array<{ path: string; content: string }>;
}

/** What a run printed, read the agent's way. */
export interface AgentOutcome {
  /** The agent says the turn completed (no error event, no error result). */
  ok: boolean;
  /** The agent's final text, if it printed one. */
  text: string;
  /** The error the agent reported, if any. */
  error: string | null;
}

export interface Agent {
  /** Short name for test titles, fixture folders and messages. */
  readonly name: string;
  /** The npm package (a pinned devDependency) whose `bin` runs it. */
  readonly package: string;
  /** The command its package puts in node_modules/.bin. */
  readonly bin: string;
  /** The protocol it speaks to the gateway, as configured here. */
  readonly protocol: AgentProtocol;
  /**
   * The setup a user writes to point the agent at a gateway (base URL, key, model, provider
   * config), plus the settings that keep it off the network (telemetry, update checks, model
   * catalogs). docs/chat-api.md shows the same, and a unit test keeps the two equal.
   */
  configure(setup: AgentSetup): AgentConfig;
  /**
   * The arguments of one non-interactive turn. `writes`: the turn must be allowed to write
   * files in its working dir (the permission flag a user passes for that).
   */
  args(prompt: string, options: { writes: boolean }): string[];
  /** Reads the run's stdout. */
  outcome(stdout: string): AgentOutcome;
}

/** The JSON values of a JSON-lines output, skipping lines that are not JSON. */
export function jsonLines(stdout: string): any[] {
  const out: any[] = [];
  for (const line of stdout.split('\n')) {
    const text = line.trim();
    if (!text.startsWith('{')) continue;
    try {
      out.push(JSON.parse(text));
    } catch {
      // a line of plain text between the events
    }
  }
  return out;
}
