// The last step: the bill. The usage is settled against the hold and recorded in one durable
// commit; the answer goes out only after it, carrying the bill (x_aihub in the body or the
// last event, x-aihub-* headers on a JSON answer).
import type { ServerResponse } from 'node:http';
import type { ApiError } from '../../http/errors.js';
import { microsToUnits } from '../../util/money.js';
import { settle, type Settlement, type UsageStatus } from '../billing.js';
import type { Usage, XAihub } from '../protocol.js';
import { keyRecord } from '../key-hold.js';
import { spendKeyTokens } from '../key-rates.js';
import type { ChatRoom } from '../room.js';
import { estimated, ZERO, type Call, type Settling } from './call.js';
import { toApiError } from './upstream-errors.js';
import { genAiResult, withSpan } from '../../telemetry/index.js';

/** Settles the bill and records usage; the caller answers only after this resolves (durable). */
export async function finish(
  room: ChatRoom,
  call: Settling,
  usage: Usage,
  status: UsageStatus,
  target: string | null,
  stream: boolean,
): Promise<Settlement> {
  const latency_ms = performance.now() - call.started_ms;
  const settlement = await withSpan('aihub.settle', () =>
    settle(
      room.deps.store,
      call.reservation,
      { ...usage, status, target, stream, protocol: call.protocol, latency_ms },
      room.now_ms(),
    ),
  );
  const key = keyRecord(room.deps.store.state, call.reservation.key_id);
  spendKeyTokens(room, key, usage.prompt_tokens + usage.completion_tokens);
  room.metrics.settled(
    call.tier.id,
    call.protocol,
    status,
    stream,
    usage.prompt_tokens,
    usage.completion_tokens,
    settlement.cost_micros,
  );
  room.metrics.genAi(call.protocol, call.tier.id, target, status, usage, latency_ms / 1000);
  genAiResult({
    protocol: call.protocol,
    tier: call.tier.id,
    target,
    input_tokens: usage.prompt_tokens,
    output_tokens: usage.completion_tokens,
    cached_tokens: usage.cached_tokens ?? 0,
    reasoning_tokens: usage.reasoning_tokens ?? 0,
    cost: microsToUnits(settlement.cost_micros),
    balance_after: microsToUnits(settlement.balance_micros),
    seconds: latency_ms / 1000,
    status,
  });
  return settlement;
}

/**
 * Settles a request no target answered and returns the error for the client. Nothing was
 * generated for it; a client that left pays for its prompt, which the upstream read.
 */
export async function unrouted(
  room: ChatRoom,
  call: Settling,
  prompt_tokens_estimate: number,
  aborted: boolean,
  stream: boolean,
  error: unknown,
): Promise<ApiError> {
  await finish(
    room,
    call,
    aborted ? estimated(prompt_tokens_estimate, 0) : ZERO,
    aborted ? 'client_closed' : 'upstream_error',
    null,
    stream,
  );
  return toApiError(error, call.reservation.scope);
}

/** unrouted() for a chat call: its prompt estimate, and whether its client left. */
export function unroutedCall(
  room: ChatRoom,
  call: Call,
  stream: boolean,
  error: unknown,
): Promise<ApiError> {
  const request = call.engine_request;
  return unrouted(
    room,
    call,
    request.prompt_tokens_estimate,
    request.signal.aborted,
    stream,
    error,
  );
}

/** The bill as `x_aihub` shows it. */
export function xAihub(
  room: ChatRoom,
  call: Settling,
  usage: Usage,
  settlement: Settlement,
  target: string | null,
): XAihub {
  return {
    request_id: call.request_id,
    target,
    tier: call.tier.tier,
    cost: microsToUnits(settlement.cost_micros),
    balance: microsToUnits(settlement.balance_micros),
    currency: room.currency,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cached_tokens: usage.cached_tokens ?? 0,
    reasoning_tokens: usage.reasoning_tokens ?? 0,
    usage: usage.estimated ? 'estimated' : 'reported',
    // No price is known for the target that answered (a model missing from the catalogue): `cost` is not what it will bill.
    ...(settlement.unpriced ? { unpriced: true } : {}),
    // The part of `cost` the wallet could not pay: owed, and paid first from the next credit.
    ...(settlement.receivable_micros > 0
      ? { receivable: microsToUnits(settlement.receivable_micros) }
      : {}),
    ...(call.warnings.length ? { warnings: [...call.warnings] } : {}),
  };
}

/** `x-aihub-warning`, one per change the gateway made to the request (header-safe: printable ASCII, bounded). */
export function warningHeaders(call: Pick<Settling, 'warnings'>): Record<string, string[]> {
  if (!call.warnings.length) return {};
  return {
    'x-aihub-warning': call.warnings.map((warning) =>
      warning.replace(/[^\x20-\x7e]/g, '?').slice(0, 512),
    ),
  };
}

/** The bill of a non-streamed answer, for clients that cannot read an extra body field. */
function billHeaders(call: Settling, settlement: Settlement): Record<string, string> {
  return {
    'x-aihub-cost': String(microsToUnits(settlement.cost_micros)),
    'x-aihub-balance': String(microsToUnits(settlement.balance_micros)),
    'x-aihub-request-id': call.request_id,
    ...(settlement.unpriced ? { 'x-aihub-unpriced': 'true' } : {}),
  };
}

/** A non-streamed answer, with its bill in the headers. */
export function answerJson(
  res: ServerResponse,
  call: Settling,
  settlement: Settlement,
  text: string,
): void {
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...billHeaders(call, settlement),
    ...warningHeaders(call),
  });
  res.end(text);
}
