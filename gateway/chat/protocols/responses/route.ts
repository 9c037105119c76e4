// OpenAI's Responses in the route table: `POST /v1/responses` through the one pipeline.
import { pipelineHandler } from '../../pipeline.js';
import type { ProtocolRoutes } from '../../route.js';
import { responsesProtocol } from './translate.js';

export const responsesRoutes: ProtocolRoutes = {
  name: 'responses',
  post: { '/v1/responses': pipelineHandler(responsesProtocol) },
};
