// OpenAI's Responses in the route table: `POST /v1/responses` through the one pipeline.
import { pipelineHandler } from '../../pipeline.js';
import { type ProtocolRoutes, BILLED_ERRORS, HEADERS_NOTE, V1_DOC } from '../../route.js';
import { responsesProtocol } from './translate.js';
import { responsesRequestSchema } from './schemas.js';
import { responsesNative } from './native.js';

export const responsesRoutes: ProtocolRoutes = {
  name: 'responses',
  native: responsesNative,
  post: { '/v1/responses': pipelineHandler(responsesProtocol) },
  docs: [
    {
      ...V1_DOC,
      method: 'post',
      path: '/v1/responses',
      summary:
        'Create a response (OpenAI Responses API: input as text or items, instructions, function tools, text.format json_schema, max_output_tokens; stream: true gives response.* events)',
      body: responsesRequestSchema,
      success: {
        status: 200,
        description: `a response object (output items, usage) with x_aihub; ${HEADERS_NOTE}`,
      },
      errors: { ...BILLED_ERRORS, 400: 'invalid_value, invalid_json, context_length_exceeded' },
    },
  ],
};
