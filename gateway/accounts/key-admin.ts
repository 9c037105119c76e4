// The admin API's key routes (issue #39): a key created with its limits, and its limits
// changed later; both audited in the transaction that makes them.
import { Router } from 'express';
import type { RoomDeps } from '../deps.js';
import { parseWith } from '../http/errors.js';
import { createApiKey, keyView, requireAccount } from './accounts.js';
import { auditKey, limitFields, updateKey } from './key-limits.js';
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

  return router;
}
