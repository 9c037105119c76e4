// A target that speaks the Gemini API natively (`protocols: ["gemini"]`): the request goes as
// it came with the held output cap in `generationConfig.maxOutputTokens`, and the answer comes
// back with the tier id as its `modelVersion`, billed on its `usageMetadata` (chat/native.ts
// relays it, holding the last response back for the bill).
import { choiceReasons, num, obj } from '../../native.js';
import type { NativeDialect, Usage } from '../../protocol.js';

/** Usage in chat terms from a `usageMetadata`, or null when it is not there. */
function geminiUsage(raw: unknown): Usage | null {
  const usage = obj(raw);
  if (!usage) return null;
  const prompt = num(usage.promptTokenCount);
  const candidates = num(usage.candidatesTokenCount) ?? 0;
  const thoughts = num(usage.thoughtsTokenCount) ?? 0;
  if (prompt === null || (usage.candidatesTokenCount === undefined && !thoughts)) return null;
  return {
    prompt_tokens: prompt,
    completion_tokens: candidates + thoughts,
    cached_tokens: Math.min(num(usage.cachedContentTokenCount) ?? 0, prompt),
    reasoning_tokens: thoughts,
  };
}

export const geminiNative: NativeDialect = {
  cap_field: 'generationConfig.maxOutputTokens',
  body: (original, max_output_tokens) => ({
    ...original,
    generationConfig: { ...obj(original.generationConfig), maxOutputTokens: max_output_tokens },
  }),
  // `native_base_urls.gemini`, by default base_url without a trailing `/openai` (Google
  // serves chat completions at `.../v1beta/openai` and its own API at `.../v1beta`).
  address(target, body, stream) {
    const base = (target.own_base_url ?? target.base_url.replace(/\/openai\/?$/, '')).replace(
      /\/$/,
      '',
    );
    const method = stream ? 'streamGenerateContent?alt=sse' : 'generateContent';
    return {
      path: `${base}/models/${encodeURIComponent(target.model)}:${method}`,
      body,
      // Google reads a Bearer token as OAuth: the key goes in its own header alone.
      headers: { 'x-goog-api-key': target.api_key, authorization: null },
    };
  },
  usageOf: (answer) => geminiUsage(answer.usageMetadata),
  output: (answer) => answer.candidates,
  finishOf: (data) => choiceReasons(data.candidates, 'finishReason'),
  json: (answer, model) => ({ ...answer, modelVersion: model }),
  reader: (model) => ({
    observe(data, seen) {
      if ('modelVersion' in data) data.modelVersion = model;
      for (const candidate of Array.isArray(data.candidates) ? data.candidates : []) {
        const parts = obj(obj(candidate)?.content)?.parts;
        for (const part of Array.isArray(parts) ? parts : []) {
          const text = obj(part)?.text;
          if (typeof text === 'string') seen.generated.push(text);
          const call = obj(part)?.functionCall;
          if (call) seen.generated.push(JSON.stringify(call));
        }
      }
      const usage = geminiUsage(data.usageMetadata);
      if (usage) seen.usage = usage;
    },
    isBilling: () => true,
    bill(data, x_aihub) {
      data.x_aihub = x_aihub;
    },
  }),
  // Every response may be the last, which carries the bill.
  holds_last: true,
  done_marker: false,
};
