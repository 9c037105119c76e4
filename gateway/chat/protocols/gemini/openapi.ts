// The Gemini API's routes in GET /openapi.json (chat/openapi.ts lists them after the /v1 ones).
import type { RouteDoc } from '../../../http/openapi.js';
import { HEADERS_NOTE } from '../../route.js';
import {
  countTokensRequestSchema as geminiCountTokensSchema,
  generateRequestSchema,
} from './schemas.js';

const gemini = { tag: 'gemini', auth: 'api_key' } as const;

/** Google's error shape, where a Gemini client reads it. */
const GEMINI_ERRORS: Record<number, string> = {
  400: 'INVALID_ARGUMENT (a google.rpc.BadRequest names the field)',
  401: 'UNAUTHENTICATED',
  402: 'FAILED_PRECONDITION: the wallet cannot cover the worst case; top up at /wallet?amount=<shortfall> (named in the message, x_aihub.topup_url and the x-aihub-topup-url header)',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND: no such tier',
  429: 'RESOURCE_EXHAUSTED with a google.rpc.RetryInfo',
  503: 'UNAVAILABLE: no upstream available',
  504: 'DEADLINE_EXCEEDED: upstream timed out',
};

/** Google's Gemini API (the key also as x-goog-api-key or ?key=); the same under /v1/. */
const geminiRouteDocs: RouteDoc[] = ['v1beta', 'v1'].flatMap((version) => [
  {
    ...gemini,
    method: 'post' as const,
    path: `/${version}/models/:model:generateContent`,
    summary:
      'Gemini generateContent on a tier (contents, systemInstruction, functionDeclarations, toolConfig, generationConfig)',
    body: generateRequestSchema,
    success: {
      status: 200,
      description: `a GenerateContentResponse {candidates, usageMetadata, modelVersion, responseId} with x_aihub; ${HEADERS_NOTE}`,
    },
    errors: GEMINI_ERRORS,
  },
  {
    ...gemini,
    method: 'post' as const,
    path: `/${version}/models/:model:streamGenerateContent`,
    summary:
      'Gemini streamGenerateContent: server-sent events with alt=sse, else one JSON array of GenerateContentResponses',
    body: generateRequestSchema,
    success: {
      status: 200,
      content_type: 'text/event-stream',
      description:
        'GenerateContentResponses; the last carries finishReason, usageMetadata and x_aihub',
    },
    errors: GEMINI_ERRORS,
  },
  {
    ...gemini,
    method: 'post' as const,
    path: `/${version}/models/:model:countTokens`,
    summary: 'Gemini countTokens: the prompt as the gateway counts it (free)',
    body: geminiCountTokensSchema,
    success: { status: 200, description: '{totalTokens, promptTokensDetails}' },
    errors: GEMINI_ERRORS,
  },
]);

const geminiModelDocs: RouteDoc[] = [
  {
    ...gemini,
    method: 'get',
    path: '/v1beta/models',
    summary: 'The tiers as Gemini models (also GET /v1/models with x-goog-api-key or ?key=)',
    success: {
      status: 200,
      description:
        '{models: [{name: "models/<tier>", inputTokenLimit, outputTokenLimit, supportedGenerationMethods, pricing}]}',
    },
  },
  {
    ...gemini,
    method: 'get',
    path: '/v1beta/models/:model',
    summary: 'One tier as a Gemini model',
    success: { status: 200, description: 'a Model {name, inputTokenLimit, outputTokenLimit, ...}' },
    errors: { 404: 'NOT_FOUND' },
  },
];

export const geminiDocs: RouteDoc[] = [...geminiRouteDocs, ...geminiModelDocs];
