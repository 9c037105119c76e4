// A target that speaks OpenAI's legacy completions natively (`protocols: ["completions"]`):
// the request goes to `<base_url>/completions` as it came with the held cap in `max_tokens`;
// the answer comes back with the tier id as its model, billed on its `usage`; in a stream any
// chunk may be the last, which carries the bill (chat/native.ts holds one back).
import { besideChat, detail, num, obj } from '../../native.js';
import type { NativeDialect, Usage } from '../../protocol.js';

/** Usage in chat terms from a completions `usage`, or null when it is not there. */
function completionsUsage(raw: unknown): Usage | null {
  const usage = obj(raw);
  if (!usage) return null;
  const prompt = num(usage.prompt_tokens);
  const completion = num(usage.completion_tokens);
  if (prompt === null || completion === null) return null;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    cached_tokens: detail(usage.prompt_tokens_details, 'cached_tokens', prompt),
    reasoning_tokens: detail(usage.completion_tokens_details, 'reasoning_tokens', completion),
  };
}

export const completionsNative: NativeDialect = {
  cap_field: 'max_tokens',
  body: (original, max_tokens) => ({ ...original, max_tokens }),
  address: besideChat('/completions'),
  usageOf: (answer) => completionsUsage(answer.usage),
  output: (answer) => answer.choices,
  json: (answer, model) => ({ ...answer, model }),
  reader: (model) => ({
    observe(data, seen) {
      if ('model' in data) data.model = model;
      const usage = completionsUsage(data.usage);
      if (usage) seen.usage = usage;
      for (const choice of Array.isArray(data.choices) ? data.choices : []) {
        const text = obj(choice)?.text;
        if (typeof text === 'string') seen.generated.push(text);
      }
    },
    isBilling: () => true,
    bill(data, x_aihub) {
      data.x_aihub = x_aihub;
    },
  }),
  holds_last: true,
  done_marker: true,
};
