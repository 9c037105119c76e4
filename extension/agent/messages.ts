// The agent's conversation with the model, kept within a bound: when it grows past it, the oldest
// tool results are replaced by a short note (the model can run the tool again). Pure (unit-tested).

export interface AgentMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_call_id?: string;
  tool_calls?: Array<{
    id: string;
    type: 'function';
    function: { name: string; arguments: string };
  }>;
}

export const ELIDED =
  '[This earlier tool result was left out to keep the conversation short; run the tool again if you need it.]';

function size(message: AgentMessage): number {
  return (
    (message.content?.length ?? 0) +
    (message.tool_calls ?? []).reduce((n, c) => n + c.function.arguments.length + 40, 0) +
    20
  );
}

export function conversationChars(messages: readonly AgentMessage[]): number {
  return messages.reduce((n, m) => n + size(m), 0);
}

/**
 * The messages to send: all of them while they fit `maxChars`; otherwise the oldest tool results
 * (never the last `keepRecent` messages) elided until they fit, or none is left to elide.
 */
export function fitConversation(
  messages: readonly AgentMessage[],
  maxChars: number,
  keepRecent = 6,
): AgentMessage[] {
  const out = messages.map((m) => ({ ...m }));
  let total = conversationChars(out);
  for (let i = 0; i < out.length - keepRecent && total > maxChars; i++) {
    const message = out[i]!;
    if (message.role !== 'tool' || message.content === ELIDED) continue;
    total -= (message.content?.length ?? 0) - ELIDED.length;
    message.content = ELIDED;
  }
  return out;
}
