// The admin API's key routes (issue #39): a key created with its limits, and its limits
// changed later; both audited in the transaction that makes them.
import { Router } from 'express';
import type { RoomDeps } from '../deps.js';
import { parseWith } from '../http/errors.js';
import { createApiKey, keyView, requireAccount } from './accounts.js';
import { z } from 'zod';
import { rowOf, table, type ApiKey } from '../store/state.js';
import { microsToUnits } from '../util/money.js';
import {
  auditKey,
  keySpendOf,
  limitFields,
  offsetMs,
  periodsAt,
  spentAgainstLimit,
  updateKey,
} from './key-limits.js';
import { createKeyBody, idParam, patchKeyBody } from './schemas.js';

export function keyAdminRouter(deps: RoomDeps): Router {
  const { store } = deps;
  const router = Router();

  router.post('/accounts/:id/keys', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    const body = parseWith(createKeyBody, req.body ?? {});
    const { record, key } = await store.transact((tx) => {
      requireAccount(tx, id);
      const keys = store.indexBy('keys', 'account_id');
      const created = createApiKey(tx, keys, id, body.name ?? '', limitFields(body));
      auditKey(tx, 'admin', 'key.create', created.record);
      return created;
    });
    res.status(201).json({ ...keyView(record), key });
  });

  router.patch('/keys/:keyId', async (req, res) => {
    const key_id = parseWith(idParam, req.params.keyId);
    const body = parseWith(patchKeyBody, req.body ?? {});
    const updated = await store.transact((tx) => updateKey(tx, key_id, body, 'admin'));
    res.json(keyView(updated));
  });

  // Keys at or past `threshold` of their limit (0.8: 80 %), fullest first: a walk of the spend
  // rows, which only limited keys have, never of every key.
  router.get('/keys/limits', async (req, res) => {
    const query = parseWith(nearQuery, req.query);
    const offset_ms = offsetMs(deps.config.keys.utc_offset);
    const near: Array<ReturnType<typeof nearView>> = [];
    for await (const ids of store.scan('key_spend', 500)) {
      const rows = await store.read(
        (state) =>
          ids.map((id) => [rowOf(table(state, 'keys'), id), keySpendOf(state, id)] as const),
        { fresh: true },
      );
      const periods = periodsAt(deps.clock.now().getTime(), offset_ms);
      for (const [key, spend] of rows) {
        if (!key || key.revoked_at || key.limit_micros == null) continue;
        const spent_micros = spentAgainstLimit(key, spend, periods);
        if (spent_micros >= key.limit_micros * query.threshold)
          near.push(nearView(key, spent_micros));
      }
    }
    near.sort((a, b) => b.used_fraction - a.used_fraction);
    res.json({ object: 'list', threshold: query.threshold, data: near.slice(0, query.limit) });
  });

  return router;
}

export const nearQuery = z.object({
  threshold: z.coerce.number().min(0).max(10).default(0.8),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

function nearView(key: ApiKey, spent_micros: number) {
  const limit_micros = key.limit_micros!;
  return {
    ...keyView(key),
    account_id: key.account_id,
    spent: microsToUnits(spent_micros),
    limit_remaining: microsToUnits(Math.max(0, limit_micros - spent_micros)),
    used_fraction: limit_micros === 0 ? 1 : Math.round((spent_micros / limit_micros) * 1e4) / 1e4,
    exceeded: spent_micros >= limit_micros,
  };
}
