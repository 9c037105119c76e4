// A target that speaks OpenAI's legacy completions natively (`protocols: ["completions"]`):
// the request goes to `<base_url>/completions` as it came with the held cap in `max_tokens`;
// the answer comes back with the tier id as its model, billed on its `usage`; in a stream any
// chunk may be the last, which carries the bill (chat/native.ts holds one back).
import { besideChat, choiceReasons, countedUsage, obj } from '../../native.js';
import type { NativeDialect } from '../../protocol.js';

const FIELDS = ['prompt_tokens', 'completion_tokens'] as const;

export const completionsNative: NativeDialect = {
  cap_field: 'max_tokens',
  body: (original, max_tokens) => ({ ...original, max_tokens }),
  address: besideChat('/completions'),
  usageOf: (answer) => countedUsage(answer.usage, FIELDS),
  output: (answer) => answer.choices,
  finishOf: (data) => choiceReasons(data.choices, 'finish_reason'),
  json: (answer, model) => ({ ...answer, model }),
  reader: (model) => ({
    observe(data, seen) {
      if ('model' in data) data.model = model;
      const usage = countedUsage(data.usage, FIELDS);
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
