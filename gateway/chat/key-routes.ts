// The key's own routes on /v1 (issue #39). `GET /v1/key`: the key reads its limit, what is
// left of it and its usage, in OpenRouter's shape. `/v1/keys`: the account owner's
// self-service API for the account's keys (list, create with limits, change, revoke),
// answered only to an unrestricted key of the account (no limit, no tier list, no expiry:
// the owner's), so that a team member's key cannot raise its own limit.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createApiKey, keyView, revokeApiKey } from '../accounts/accounts.js';
import {
  auditKey,
  keySpendOf,
  limitFields,
  offsetMs,
  periodsAt,
  spendAt,
  spentAgainstLimit,
  updateKey,
} from '../accounts/key-limits.js';
import { createKeyBody, idParam, patchKeyBody } from '../accounts/schemas.js';
import { ApiError, parseWith } from '../http/errors.js';
import { pathOf, sendJson, type Locals } from '../http/lean.js';
import type { ApiKey } from '../store/state.js';
import { microsToUnits } from '../util/money.js';
import type { Route } from './route.js';
import type { ChatRoom } from './room.js';
import { authorize } from './steps/auth.js';
import { readJson } from './steps/body.js';

/** `GET /v1/key`: the key's limit and usage (durable figures). */
export async function keyInfo(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
): Promise<void> {
  const { key } = authorize(room, req, locals);
  sendJson(res, 200, { data: await keyFigures(room, key) });
}

async function keyFigures(room: ChatRoom, key: ApiKey) {
  const { store } = room.deps;
  const periods = periodsAt(room.now_ms(), offsetMs(room.deps.config.keys.utc_offset));
  const [row, stats] = await Promise.all([
    store.read((state) => keySpendOf(state, key.id), { fresh: true }),
    store.reads.keyStats(key.id),
  ]);
  // Period figures are kept for keys with a limit (the row their holds and settlements write).
  const tracked = key.limit_micros != null || row !== undefined;
  const spend = spendAt(row, periods);
  const units = (micros: number) => (tracked ? microsToUnits(micros) : null);
  const limited = key.limit_micros != null;
  return {
    name: key.name,
    label: key.prefix,
    limit: limited ? microsToUnits(key.limit_micros!) : null,
    limit_remaining: limited
      ? microsToUnits(Math.max(0, key.limit_micros! - spentAgainstLimit(key, row, periods)))
      : null,
    limit_reset: key.limit_reset ?? null,
    limit_resets_at:
      limited && key.limit_reset ? new Date(periods[key.limit_reset].ends_ms).toISOString() : null,
    usage: microsToUnits(stats.cost_micros),
    usage_daily: units(spend.daily),
    usage_weekly: units(spend.weekly),
    usage_monthly: units(spend.monthly),
    models: key.models ?? null,
    expires_at: key.expires_at ?? null,
    rate_limit: {
      requests: Math.min(
        key.requests_per_minute ?? Infinity,
        room.config.rate_limit.requests_per_minute,
      ),
      interval: '1m',
      tokens_per_minute: key.tokens_per_minute ?? null,
    },
    currency: room.currency,
    time_zone: room.deps.config.keys.utc_offset,
  };
}

/** The owner's key: one of the account's with no limit, tier list or expiry. */
function owner(room: ChatRoom, req: IncomingMessage, locals: Locals) {
  const found = authorize(room, req, locals);
  const { key } = found;
  if (key.limit_micros != null || key.models || key.expires_at)
    throw new ApiError(
      403,
      'key_not_permitted',
      "managing keys needs an unrestricted key of the account (no limit, model list or expiry): the owner's",
      null,
      'permission_error',
    );
  return found;
}

async function ownerKeys(
  room: ChatRoom,
  req: IncomingMessage,
  res: ServerResponse,
  locals: Locals,
) {
  const { store } = room.deps;
  const { account, key: caller } = owner(room, req, locals);
  const actor = `key:${caller.id}`;
  const path = pathOf(req.url);
  const id = path === '/v1/keys' ? null : parseWith(idParam, decodeURIComponent(path.slice(9)));
  if (id === null && req.method === 'GET') {
    const keys = await store.list('keys', 'account_id', account.id);
    sendJson(res, 200, { object: 'list', data: keys.map(keyView) });
    return;
  }
  if (id === null && req.method === 'POST') {
    const body = parseWith(createKeyBody, await readJson(req, room.config.body_limit_bytes));
    const { record, key } = await store.transact(
      (tx) => {
        const keys = store.indexBy('keys', 'account_id');
        const made = createApiKey(tx, keys, account.id, body.name ?? '', limitFields(body));
        auditKey(tx, actor, 'key.create', made.record);
        return made;
      },
      { scope: locals.scope },
    );
    sendJson(res, 201, { ...keyView(record), key });
    return;
  }
  if (id !== null && req.method === 'PATCH') {
    const body = parseWith(patchKeyBody, await readJson(req, room.config.body_limit_bytes));
    const updated = await store.transact((tx) => updateKey(tx, id, body, actor, account.id), {
      scope: locals.scope,
    });
    sendJson(res, 200, keyView(updated));
    return;
  }
  if (id !== null && req.method === 'DELETE') {
    await store.transact((tx) => revokeApiKey(tx, id, account.id), {
      scope: locals.scope,
    });
    res.writeHead(204).end();
    return;
  }
  throw new ApiError(405, 'method_not_allowed', `${req.method} is not served on ${path}`);
}

/** The routes above, for chat/routes.ts's table. */
export const KEY_ROUTE: Route = { protocol: 'other', handle: keyInfo };
export const OWNER_KEYS_ROUTE: Route = { protocol: 'other', handle: ownerKeys };

/** Whether a path is the owner's key API. */
export function isOwnerKeysPath(path: string): boolean {
  return path === '/v1/keys' || path.startsWith('/v1/keys/');
}
