// Anthropic's Messages in the route table: `POST /v1/messages` through the one pipeline,
// `POST /v1/messages/count_tokens`, and Anthropic's error shape on those paths.
import { pipelineHandler } from '../../pipeline.js';
import type { ProtocolRoutes } from '../../route.js';
import { runCountTokens } from './count-tokens.js';
import { anthropicErrorShape } from './errors.js';
import { messagesProtocol } from './translate.js';

export const messagesRoutes: ProtocolRoutes = {
  name: 'messages',
  post: {
    '/v1/messages': pipelineHandler(messagesProtocol),
    '/v1/messages/count_tokens': runCountTokens,
  },
  error_shape: anthropicErrorShape,
};
