// Anthropic's Messages in the route table: `POST /v1/messages` through the one pipeline,
// `POST /v1/messages/count_tokens`, and Anthropic's error shape on those paths.
import { pipelineHandler } from '../../pipeline.js';
import { type ProtocolRoutes, BILLED_ERRORS, HEADERS_NOTE, V1_DOC } from '../../route.js';
import { runCountTokens } from './count-tokens.js';
import { anthropicErrorShape } from './errors.js';
import { messagesProtocol } from './translate.js';
import { countTokensRequestSchema, messagesRequestSchema } from './schemas.js';
import { messagesNative } from './native.js';

export const messagesRoutes: ProtocolRoutes = {
  name: 'messages',
  native: messagesNative,
  post: {
    '/v1/messages': pipelineHandler(messagesProtocol),
    '/v1/messages/count_tokens': runCountTokens,
  },
  error_shape: anthropicErrorShape,
  docs: [
    {
      ...V1_DOC,
      method: 'post',
      path: '/v1/messages',
      summary:
        "Create a message (Anthropic Messages API: x-api-key or Bearer, anthropic-version accepted; system, messages with text, image, tool_use and tool_result blocks, tools, max_tokens required; stream: true gives message_start ... message_stop events); errors in Anthropic's shape",
      body: messagesRequestSchema,
      success: {
        status: 200,
        description: `a message {id, type: "message", role, content, stop_reason, usage}; ${HEADERS_NOTE}`,
      },
      errors: { ...BILLED_ERRORS, 400: 'invalid_request_error (the field named in the message)' },
    },
    {
      ...V1_DOC,
      method: 'post',
      path: '/v1/messages/count_tokens',
      summary: 'Count the input tokens of an Anthropic Messages request (not billed)',
      body: countTokensRequestSchema,
      success: { status: 200, description: '{input_tokens}' },
      errors: { 400: 'invalid_request_error', 404: 'model_not_found' },
    },
  ],
};
