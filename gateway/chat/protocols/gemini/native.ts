// A target that speaks the Gemini API natively (`protocols: ["gemini"]`): the request goes as
// it came with the held output cap in `generationConfig.maxOutputTokens`, and the answer comes
// back with the tier id as its `modelVersion`, billed on its `usageMetadata` (chat/native.ts
// relays it, holding the last response back for the bill).
import { num, obj } from '../../native.js';
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
  usageOf: (answer) => geminiUsage(answer.usageMetadata),
  json: (answer, model) => ({ ...answer, modelVersion: model }),
  observe(data, model, generated) {
    if ('modelVersion' in data) data.modelVersion = model;
    for (const candidate of Array.isArray(data.candidates) ? data.candidates : []) {
      const parts = obj(obj(candidate)?.content)?.parts;
      for (const part of Array.isArray(parts) ? parts : []) {
        const text = obj(part)?.text;
        if (typeof text === 'string') generated.push(text);
        const call = obj(part)?.functionCall;
        if (call) generated.push(JSON.stringify(call));
      }
    }
    return geminiUsage(data.usageMetadata);
  },
  // Every response may be the last, which carries the bill.
  holds_last: true,
};
