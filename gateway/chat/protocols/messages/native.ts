// A target that speaks Anthropic's Messages natively (`protocols: ["messages"]`): the request
// goes to `<base_url>/messages` with Anthropic's key header and version, the held cap in
// `max_tokens`; the answer comes back with the tier id as its model, billed on its `usage`
// (cache reads and writes counted as prompt), the bill on the stream's `message_delta`.
import { besideChat, num, obj } from '../../native.js';
import type { NativeDialect, Usage } from '../../protocol.js';

/** Usage in chat terms from a Messages `usage`, or null when it is not there. */
function messagesUsage(raw: unknown): Usage | null {
  const usage = obj(raw);
  if (!usage) return null;
  const input = num(usage.input_tokens);
  const output = num(usage.output_tokens);
  if (input === null || output === null) return null;
  const cached = num(usage.cache_read_input_tokens) ?? 0;
  const written = num(usage.cache_creation_input_tokens) ?? 0;
  return {
    prompt_tokens: input + cached + written,
    completion_tokens: output,
    cached_tokens: cached,
    ...(written ? { cache_write_tokens: written } : {}),
  };
}

export const messagesNative: NativeDialect = {
  cap_field: 'max_tokens',
  body: (original, max_tokens) => ({ ...original, max_tokens }),
  address: besideChat('/messages', (api_key) => ({
    'x-api-key': api_key,
    'anthropic-version': '2023-06-01',
  })),
  usageOf: (answer) => messagesUsage(answer.usage),
  output: (answer) => answer.content,
  // A JSON answer's `stop_reason`; in a stream, message_delta's `delta.stop_reason`.
  finishOf: (data) => {
    const reason = data.stop_reason ?? obj(data.delta)?.stop_reason;
    return typeof reason === 'string' ? [reason] : [];
  },
  json: (answer, model) => ({ ...answer, model }),
  reader(model) {
    // message_start's counts, for a closing delta that reports only the output.
    let cached_tokens = 0;
    let cache_write_tokens = 0;
    return {
      observe(data, seen) {
        const message = obj(data.message);
        if (message) {
          data.message = { ...message, model };
          const usage = obj(message.usage);
          cached_tokens = usage ? (num(usage.cache_read_input_tokens) ?? 0) : 0;
          cache_write_tokens = usage ? (num(usage.cache_creation_input_tokens) ?? 0) : 0;
          seen.input_tokens = usage
            ? (num(usage.input_tokens) ?? 0) + cached_tokens + cache_write_tokens
            : null;
        }
        const delta = obj(data.delta);
        if (delta && typeof delta.text === 'string') seen.generated.push(delta.text);
        if (delta && typeof delta.partial_json === 'string')
          seen.generated.push(delta.partial_json);
        if (data.type !== 'message_delta') return;
        const usage = obj(data.usage);
        const output = usage ? num(usage.output_tokens) : null;
        // The final delta's usage may repeat the input counts; else they are message_start's
        // (cache reads included: billed at the cached price, not as input).
        const full = usage ? messagesUsage(usage) : null;
        if (output === null) return;
        const input_tokens = seen.input_tokens ?? 0;
        seen.usage = full?.prompt_tokens
          ? full
          : {
              prompt_tokens: input_tokens,
              completion_tokens: output,
              cached_tokens: Math.min(cached_tokens, input_tokens),
              ...(cache_write_tokens ? { cache_write_tokens } : {}),
            };
      },
      isBilling: (data) => data.type === 'message_delta',
      bill(data, x_aihub) {
        data.x_aihub = x_aihub;
      },
    };
  },
  holds_last: false,
  done_marker: false,
};
