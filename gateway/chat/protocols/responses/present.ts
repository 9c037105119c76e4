// The parts of a Response object that the JSON answer and the stream's events share.
import type { UpstreamUsage } from '../../../llm/types.js';
import { usageDetails, type AnswerMeta, type Usage } from '../../protocol.js';
import type { ResponsesRequest } from './schemas.js';

/** The fields of a Response that echo the request. */
export function responseEnvelope(body: ResponsesRequest, meta: AnswerMeta) {
  return {
    id: `resp_${meta.request_id}`,
    object: 'response' as const,
    created_at: meta.created,
    model: meta.model,
    instructions: body.instructions ?? null,
    // The limit the answer ran under: the client's, or the tier's cap of it.
    max_output_tokens: body.max_output_tokens != null ? meta.max_output_tokens : null,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    temperature: body.temperature ?? null,
    top_p: body.top_p ?? null,
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    text: { format: body.text?.format ?? { type: 'text' } },
    metadata: {},
    store: false,
    error: null,
  };
}

export function responsesUsage(usage: Usage, upstream: UpstreamUsage | null | undefined) {
  const details = usageDetails(upstream);
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: details.cached_tokens },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: details.reasoning_tokens },
    total_tokens: usage.prompt_tokens + usage.completion_tokens,
  };
}

export function incompleteDetails(finish_reason: string | null | undefined) {
  if (finish_reason === 'length') return { reason: 'max_output_tokens' };
  if (finish_reason === 'content_filter') return { reason: 'content_filter' };
  return null;
}
