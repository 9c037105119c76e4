// A target that speaks OpenAI's Responses natively (`protocols: ["responses"]`): the request
// goes to `<base_url>/responses` as it came with the held cap in `max_output_tokens`; the
// answer comes back with the tier id as its model, billed on its `usage`, the bill on the
// stream's closing `response.*` event (chat/native.ts relays it).
import { besideChat, countedUsage, obj } from '../../native.js';
import type { NativeDialect } from '../../protocol.js';

const FIELDS = ['input_tokens', 'output_tokens'] as const;

const CLOSING = new Set(['response.completed', 'response.incomplete', 'response.failed']);

export const responsesNative: NativeDialect = {
  cap_field: 'max_output_tokens',
  body: (original, max_output_tokens) => ({ ...original, max_output_tokens }),
  address: besideChat('/responses'),
  usageOf: (answer) => countedUsage(answer.usage, FIELDS),
  output: (answer) => answer.output,
  // A response's status, or why it is incomplete (`max_output_tokens`); in a stream, the
  // closing event's response.
  finishOf: (data) => {
    const response = obj(data.response) ?? (data.object === 'response' ? data : null);
    if (!response || typeof response.status !== 'string' || response.status === 'in_progress')
      return [];
    const why = obj(response.incomplete_details)?.reason;
    return [typeof why === 'string' ? why : response.status];
  },
  json: (answer, model) => ({ ...answer, model }),
  reader: (model) => ({
    observe(data, seen) {
      const response = obj(data.response);
      if (response) {
        if ('model' in response) data.response = { ...response, model };
        const usage = countedUsage(response.usage, FIELDS);
        if (usage) seen.usage = usage;
      }
      if (typeof data.delta === 'string') seen.generated.push(data.delta);
    },
    isBilling: (data) => typeof data.type === 'string' && CLOSING.has(data.type),
    bill(data, x_aihub) {
      const response = obj(data.response);
      if (response) data.response = { ...response, x_aihub };
      else data.x_aihub = x_aihub;
    },
  }),
  holds_last: false,
  done_marker: false,
};
