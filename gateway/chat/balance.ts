// `GET /v1/balance`: the wallet, what is owed, usage in total and per wire protocol, and the
// free tier's allowance today; durable figures only.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson, type Locals } from '../http/lean.js';
import { balanceMicros, owedMicros } from '../ledger/ledger.js';
import { table } from '../store/state.js';
import { microsToUnits } from '../util/money.js';
import { freeTokensUsed, secondsToNextUtcDay, utcDay } from './billing.js';
import { PROTOCOL_NAMES } from './protocols/index.js';
import type { ChatRoom } from './room.js';
import { authorize } from './steps/auth.js';

export async function balance(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): Promise<void> {
  const { account } = authorize(room, req, locals);
  const now_ms = room.now_ms();
  const free = room.config.models['service-ai-free'];
  // Durable and current figures (earlier commits waited for; on PostgreSQL what the cache
  // lacks or another gateway may have changed is loaded first, without stopping the loop).
  const figures = await room.deps.store.read(
    (state) => ({
      usage: table(state, 'usage')[account.id],
      balance_micros: balanceMicros(state, account.id),
      owed_micros: owedMicros(state, account.id),
      free_used:
        free.daily_token_allowance !== null ? freeTokensUsed(state, account.id, utcDay(now_ms)) : 0,
    }),
    { fresh: true },
  );
  const usage = figures.usage ?? {
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost_micros: 0,
  };
  sendJson(res, 200, {
    object: 'balance',
    currency: room.currency,
    balance: microsToUnits(figures.balance_micros),
    owed: microsToUnits(figures.owed_micros),
    usage: {
      requests: usage.requests,
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      cached_tokens: usage.cached_tokens ?? 0,
      reasoning_tokens: usage.reasoning_tokens ?? 0,
      cost: microsToUnits(usage.cost_micros),
      // Per wire protocol, every protocol named (zeros for those not used yet).
      by_protocol: Object.fromEntries(
        PROTOCOL_NAMES.map((name) => {
          const p = usage.by_protocol?.[name];
          return [
            name,
            {
              requests: p?.requests ?? 0,
              prompt_tokens: p?.prompt_tokens ?? 0,
              completion_tokens: p?.completion_tokens ?? 0,
              cached_tokens: p?.cached_tokens ?? 0,
              reasoning_tokens: p?.reasoning_tokens ?? 0,
              cost: microsToUnits(p?.cost_micros ?? 0),
            },
          ];
        }),
      ),
    },
    ...(free.daily_token_allowance !== null
      ? {
          free_tier: {
            model: free.id,
            daily_token_allowance: free.daily_token_allowance,
            tokens_used_today: figures.free_used,
            resets_in_seconds: secondsToNextUtcDay(now_ms),
          },
        }
      : {}),
  });
}
