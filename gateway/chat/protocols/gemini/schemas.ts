// Google's Gemini API request (`POST /v1beta/models/{model}:generateContent`,
// `:streamGenerateContent`, `:countTokens`) as zod schemas. The model comes from the path.
// Objects are loose: Google adds fields to every release of its clients, and a field the
// gateway gives no meaning to is ignored (the ones a user would miss are named in the
// x-aihub-warning header by translate.ts), never refused.
import { z } from 'zod';

const MAX_CONTENTS = 4_096;
const MAX_PARTS = 512;
const MAX_TOOLS = 256;
const text = z.string().max(10_000_000);
const name = z.string().min(1).max(256);
const jsonObject = z.record(z.string(), z.unknown());

/** One part of a turn: exactly one of its data fields is set (Google's `oneof data`). */
export const partSchema = z.looseObject({
  text: text.optional(),
  /** A part of the model's own thinking, sent back by clients: never forwarded. */
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  inlineData: z
    .looseObject({ mimeType: z.string().min(1).max(256), data: z.string().max(30_000_000) })
    .optional(),
  fileData: z
    .looseObject({ mimeType: z.string().max(256).optional(), fileUri: z.string().max(100_000) })
    .optional(),
  functionCall: z
    .looseObject({ id: z.string().max(256).optional(), name, args: jsonObject.optional() })
    .optional(),
  functionResponse: z
    .looseObject({ id: z.string().max(256).optional(), name, response: jsonObject.optional() })
    .optional(),
  executableCode: z.looseObject({}).optional(),
  codeExecutionResult: z.looseObject({}).optional(),
});
export type Part = z.output<typeof partSchema>;

export const contentSchema = z.looseObject({
  /** `function` is the role older clients gave a turn of function responses. */
  role: z.enum(['user', 'model', 'function']).optional(),
  parts: z.array(partSchema).max(MAX_PARTS).default([]),
});
export type Content = z.output<typeof contentSchema>;

const functionDeclaration = z.looseObject({
  name,
  description: z.string().max(100_000).optional(),
  /** Gemini's OpenAPI subset (types in capitals, `nullable`); translate.ts makes JSON Schema of it. */
  parameters: jsonObject.optional(),
  parametersJsonSchema: z.unknown().optional(),
});

/** A tool: function declarations, or a tool Google runs on its side (search, code, ...). */
export const toolSchema = z.looseObject({
  functionDeclarations: z.array(functionDeclaration).max(MAX_TOOLS).optional(),
});
export type Tool = z.output<typeof toolSchema>;

const toolConfig = z.looseObject({
  functionCallingConfig: z
    .looseObject({
      mode: z.enum(['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED']).optional(),
      allowedFunctionNames: z.array(name).max(MAX_TOOLS).optional(),
    })
    .optional(),
});

const generationConfig = z.looseObject({
  stopSequences: z.array(z.string().min(1).max(1_000)).max(16).optional(),
  responseMimeType: z.string().max(100).optional(),
  responseSchema: jsonObject.optional(),
  responseJsonSchema: z.unknown().optional(),
  /** The spelling the SDK used before responseJsonSchema. */
  _responseJsonSchema: z.unknown().optional(),
  responseModalities: z.array(z.string().max(32)).max(8).optional(),
  candidateCount: z.int().min(1).max(8).optional(),
  maxOutputTokens: z.int().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  topK: z.number().min(0).optional(),
  seed: z.int().optional(),
  presencePenalty: z.number().min(-2).max(2).optional(),
  frequencyPenalty: z.number().min(-2).max(2).optional(),
  responseLogprobs: z.boolean().optional(),
  logprobs: z.int().min(0).max(20).optional(),
  thinkingConfig: z
    .looseObject({
      includeThoughts: z.boolean().optional(),
      thinkingBudget: z.int().optional(),
      thinkingLevel: z.string().max(32).optional(),
    })
    .optional(),
});

const system = z.union([text, contentSchema]);

const common = {
  contents: z.array(contentSchema).min(1, 'must contain at least one content').max(MAX_CONTENTS),
  systemInstruction: system.optional(),
  tools: z.array(toolSchema).max(MAX_TOOLS).optional(),
  toolConfig: toolConfig.optional(),
};

export const generateRequestSchema = z.looseObject({
  ...common,
  generationConfig: generationConfig.optional(),
  safetySettings: z.array(z.unknown()).max(64).optional(),
  cachedContent: z.string().max(1_000).optional(),
});
export type GenerateRequest = z.output<typeof generateRequestSchema>;

/** `:countTokens` takes the contents alone, or a whole generateContent request. */
export const countTokensRequestSchema = z.looseObject({
  contents: z.array(contentSchema).max(MAX_CONTENTS).optional(),
  generateContentRequest: z.looseObject(common).optional(),
});
