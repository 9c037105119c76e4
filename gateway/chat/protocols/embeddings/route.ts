// OpenAI embeddings (`POST /v1/embeddings`): string or array input (token arrays too),
// `dimensions`, `encoding_format` float or base64. Billed per input token at the tier's
// input price, through the same hold and settlement as a chat request.
import { decode } from 'gpt-tokenizer/encoding/cl100k_base';
import { z } from 'zod';
import { countTextTokens } from '../../../llm/tokens.js';
import type { UpstreamEmbeddings } from '../../../llm/types.js';
import { invalid, parseBody } from '../parse.js';
import type { XAihub } from '../../protocol.js';

const MAX_INPUTS = 2_048;
/** Per input, as OpenAI's embedding models. */
export const MAX_INPUT_TOKENS = 8_192;
const tokens = z.array(z.int().min(0).max(1_000_000)).min(1).max(MAX_INPUT_TOKENS);

export const embeddingsRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  input: z.union([
    z.string().max(1_000_000),
    z.array(z.string().max(1_000_000)).min(1).max(MAX_INPUTS),
    tokens,
    z.array(tokens).min(1).max(MAX_INPUTS),
  ]),
  dimensions: z.int().min(1).max(4_096).optional(),
  encoding_format: z.enum(['float', 'base64']).optional(),
  user: z.string().max(256).optional(),
});

export interface EmbeddingsCall {
  model: string;
  input: string[];
  prompt_tokens_estimate: number;
  dimensions: number | null;
  base64: boolean;
}

export function parseEmbeddings(raw: unknown): EmbeddingsCall {
  const body = parseBody(embeddingsRequestSchema, raw);
  const input = body.input;
  let texts: string[];
  if (typeof input === 'string') texts = [input];
  else if (input.every((item) => typeof item === 'string')) texts = input as string[];
  else if (input.every((item) => typeof item === 'number'))
    texts = [decodeTokens(input as number[])];
  else texts = (input as number[][]).map(decodeTokens);
  let prompt_tokens_estimate = 0;
  texts.forEach((text, index) => {
    const count = countTextTokens(text);
    if (count > MAX_INPUT_TOKENS)
      throw invalid(
        `input[${index}] has about ${count} tokens; at most ${MAX_INPUT_TOKENS} per input`,
        'input',
      );
    prompt_tokens_estimate += count;
  });
  return {
    model: body.model,
    input: texts,
    prompt_tokens_estimate,
    dimensions: body.dimensions ?? null,
    base64: body.encoding_format === 'base64',
  };
}

function decodeTokens(ids: number[]): string {
  try {
    return decode(ids);
  } catch {
    throw invalid('input holds token ids that are not cl100k_base tokens', 'input');
  }
}

/** The answer: vectors in input order, base64 as little-endian float32 when asked. */
export function embeddingsJson(
  call: EmbeddingsCall,
  upstream: UpstreamEmbeddings,
  prompt_tokens: number,
  x_aihub: XAihub,
  model: string,
): unknown {
  const ordered = upstream.data
    .map((item, position) => ({ index: item.index ?? position, embedding: item.embedding }))
    .sort((a, b) => a.index - b.index);
  return {
    object: 'list',
    data: ordered.map(({ index, embedding }) => ({
      object: 'embedding',
      index,
      embedding: call.base64
        ? Buffer.from(new Float32Array(embedding).buffer).toString('base64')
        : embedding,
    })),
    model,
    usage: { prompt_tokens, total_tokens: prompt_tokens },
    x_aihub,
  };
}
