// `POST /v1/embeddings` through the one pipeline (chat/pipeline.ts): the same key, limits,
// hold, router, settlement and bill as a chat request; no output tokens.
import { pipelineHandler, type Kind } from '../../pipeline.js';
import type { Usage } from '../../protocol.js';
import { type ProtocolRoutes, BILLED_ERRORS, HEADERS_NOTE, V1_DOC } from '../../route.js';
import { ZERO, type Settling } from '../../steps/call.js';
import { answerJson, finish, unrouted, xAihub } from '../../steps/settle.js';
import {
  embeddingsJson,
  parseEmbeddings,
  type EmbeddingsCall,
  embeddingsRequestSchema,
} from './route.js';

export const embeddingsKind: Kind<EmbeddingsCall> = {
  name: 'embeddings',
  parse: parseEmbeddings,
  model: (body) => body.model,
  ask: (_tier, body) => ({
    prompt_tokens_estimate: body.prompt_tokens_estimate,
    max_output_tokens: 0,
    cap_field: 'input',
  }),
  async serve(room, res, held) {
    const { body, tier, signal, prompt_tokens_estimate } = held;
    const call: Settling = { ...held, protocol: 'embeddings', warnings: [] };
    let routed;
    try {
      routed = await room.router.embed(tier.targets, {
        input: body.input,
        dimensions: body.dimensions,
        signal,
      });
    } catch (error) {
      throw await unrouted(room, call, prompt_tokens_estimate, signal.aborted, false, error);
    }
    const reported = routed.value.usage?.prompt_tokens;
    const prompt_tokens = reported ?? prompt_tokens_estimate;
    const usage: Usage = { ...ZERO, prompt_tokens, estimated: reported === undefined };
    const status = signal.aborted ? 'client_closed' : 'ok';
    const settlement = await finish(room, call, usage, status, routed.target, false);
    if (res.destroyed) return;
    const x_aihub = xAihub(room, call, usage, settlement, routed.target);
    const text = JSON.stringify(
      embeddingsJson(body, routed.value, prompt_tokens, x_aihub, tier.id),
    );
    answerJson(res, call, settlement, text);
  },
};

/** Embeddings in the route table. */
export const embeddingsRoutes: ProtocolRoutes = {
  name: 'embeddings',
  post: { '/v1/embeddings': pipelineHandler(embeddingsKind) },
  docs: [
    {
      ...V1_DOC,
      method: 'post',
      path: '/v1/embeddings',
      summary:
        'Create embeddings (OpenAI shape: string or array input, dimensions, encoding_format)',
      body: embeddingsRequestSchema,
      success: {
        status: 200,
        description: `{object: "list", data: [{object: "embedding", index, embedding}], model, usage} with x_aihub; ${HEADERS_NOTE}`,
      },
      errors: { ...BILLED_ERRORS, 400: 'invalid_value, input too long' },
    },
  ],
};
