// A non-streamed answer: the router's completion (or a native target's answer as sent) is
// counted and serialized in the protocol's shape, billed, and sent with its bill.
import type { ServerResponse } from 'node:http';
import { ApiError } from '../../http/errors.js';
import { countTextTokens, toolCallText } from '../../llm/tokens.js';
import type { UpstreamCompletion } from '../../llm/types.js';
import type { UsageStatus } from '../billing.js';
import { dialectOf, nativeJson } from '../native.js';
import type { Usage } from '../protocol.js';
import type { ChatRoom } from '../room.js';
import { estimated, fromUpstream, ZERO, type Call } from './call.js';
import { capOutput, overrunWarning, trimCompletion } from './output-meter.js';
import { completeNative, nativeRequest } from './pass-through.js';
import { answerJson, finish, unroutedCall, xAihub } from './settle.js';
import { genAiFinish, genAiFinishReasons } from '../../telemetry/index.js';

export async function answer(room: ChatRoom, res: ServerResponse, call: Call): Promise<void> {
  let completion: UpstreamCompletion;
  let target: string;
  const native = nativeRequest(room, call, false);
  let native_body: Record<string, unknown> | null = null;
  try {
    if (native) ({ completion, target, native_body } = await completeNative(room, call, native));
    else {
      const routed = await room.router.complete(call.tier.targets, call.engine_request);
      completion = routed.value;
      target = routed.target;
    }
  } catch (error) {
    throw await unroutedCall(room, call, false, error);
  }
  // The answer is counted and serialized before anything is billed on it: one that cannot
  // be (nested too deep for JSON.stringify) is an upstream failure, which costs nothing.
  let usage: Usage;
  let answer_text: string;
  try {
    usage = billedUsage(call, completion, native_body);
    answer_text = JSON.stringify(
      native_body
        ? nativeJson(dialectOf(call.body)!, native_body, call.tier.id)
        : call.body.json(completion, usage, call.meta),
    );
  } catch (error) {
    await finish(room, call, ZERO, 'upstream_error', target, false);
    throw new ApiError(
      502,
      'upstream_error',
      `the upstream's answer could not be read (${(error as Error).message.slice(0, 100)})`,
      null,
      'api_error',
    );
  }
  if (native_body) {
    const dialect = dialectOf(call.body)!;
    genAiFinishReasons(
      () => dialect.finishOf(native_body),
      () => dialect.output(native_body),
    );
  } else genAiFinish(completion.choices, () => completion.choices.map((choice) => choice.message));
  const status: UsageStatus = call.engine_request.signal.aborted ? 'client_closed' : 'ok';
  const settlement = await finish(room, call, usage, status, target, false);
  if (res.destroyed) return;
  // x_aihub last, as the settlement made it.
  const text = call.body.bill_in_body
    ? `${answer_text.slice(0, -1)},"x_aihub":${JSON.stringify(xAihub(room, call, usage, settlement, target))}}`
    : answer_text;
  answerJson(res, call, settlement, text);
}

function countCompletion(completion: UpstreamCompletion): number {
  let tokens = 0;
  for (const choice of completion.choices) {
    if (choice.message.content) tokens += countTextTokens(choice.message.content);
    const tool_calls = (choice.message as { tool_calls?: unknown }).tool_calls;
    if (tool_calls) tokens += countTextTokens(toolCallText(tool_calls));
  }
  return tokens;
}

/**
 * What a JSON answer is billed: the upstream's usage (a native answer's in its protocol's
 * fields), else the gateway's count; never more output than the hold covers. An upstream that
 * ignored the limit has its answer cut to it and is billed on what is sent.
 */
function billedUsage(
  call: Call,
  completion: UpstreamCompletion,
  native_body: Record<string, unknown> | null,
): Usage {
  const limit_tokens = call.engine_request.max_output_tokens * call.body.choices;
  let counted: Usage;
  let over = false;
  if (native_body) {
    const dialect = dialectOf(call.body)!;
    counted =
      dialect.usageOf(native_body) ??
      estimated(
        call.engine_request.prompt_tokens_estimate,
        countTextTokens(JSON.stringify(dialect.output(native_body) ?? '')),
      );
  } else {
    over = trimCompletion(completion, call.engine_request.max_output_tokens);
    const reported = completion.usage ? fromUpstream(completion.usage) : null;
    counted =
      reported && !over
        ? reported
        : {
            ...(reported ?? estimated(call.engine_request.prompt_tokens_estimate, 0)),
            completion_tokens: countCompletion(completion),
            estimated: true,
          };
  }
  const { usage, capped } = capOutput(counted, limit_tokens);
  if (over || (capped && !counted.estimated)) call.warnings.push(overrunWarning(limit_tokens));
  return usage;
}
