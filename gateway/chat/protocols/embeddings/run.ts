// `POST /v1/embeddings` through the pipeline's steps: the same key, limits, hold, router,
// settlement and bill as a chat request; no output tokens.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Locals } from '../../../http/lean.js';
import type { ChatRoom } from '../../room.js';
import { admit, begin } from '../../steps/admit.js';
import { ZERO, type Settling } from '../../steps/call.js';
import { front } from '../../steps/front.js';
import { hold } from '../../steps/hold.js';
import { answerJson, finish, unrouted, xAihub } from '../../steps/settle.js';
import type { Usage } from '../../protocol.js';
import { embeddingsJson, parseEmbeddings } from './route.js';
import type { ProtocolRoutes } from '../../route.js';

export async function runEmbeddings(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): Promise<void> {
  const started_ms = performance.now();
  const request_id = locals.request_id;
  const { account, key, raw } = await front(room, req, locals);
  const body = parseEmbeddings(raw);
  const tier = admit(room, body.model);
  const { reservation, free_tokens } = await hold(room, {
    account_id: account.id,
    key_id: key.id,
    tier,
    request_id,
    prompt_tokens_estimate: body.prompt_tokens_estimate,
    max_output_tokens: 0,
    cap_field: 'input',
  });
  const { signal, end } = begin(room, res, account.id, reservation, free_tokens);
  const call: Settling = {
    reservation,
    tier,
    request_id,
    started_ms,
    protocol: 'embeddings',
    warnings: [],
  };
  try {
    let routed;
    try {
      routed = await room.router.embed(tier.targets, {
        input: body.input,
        dimensions: body.dimensions,
        signal,
      });
    } catch (error) {
      throw await unrouted(room, call, body.prompt_tokens_estimate, signal.aborted, false, error);
    }
    const reported = routed.value.usage?.prompt_tokens;
    const prompt_tokens = reported ?? body.prompt_tokens_estimate;
    const usage: Usage = { ...ZERO, prompt_tokens, estimated: reported === undefined };
    const settlement = await finish(
      room,
      call,
      usage,
      signal.aborted ? 'client_closed' : 'ok',
      routed.target,
      false,
    );
    if (res.destroyed) return;
    const text = JSON.stringify(
      embeddingsJson(
        body,
        routed.value,
        prompt_tokens,
        xAihub(room, call, usage, settlement, routed.target),
        tier.id,
      ),
    );
    answerJson(res, call, settlement, text);
  } finally {
    end();
  }
}

/** Embeddings in the route table. */
export const embeddingsRoutes: ProtocolRoutes = {
  name: 'embeddings',
  post: { '/v1/embeddings': runEmbeddings },
};
