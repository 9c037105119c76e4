// API logs of /api requests and the admin audit log: history records in the journal (one per
// request), never a key, a password, an Aadhaar number or a body of an /api request.
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../log.js';
import type { Store, Tx } from '../store/types.js';
import { clientAddress } from './auth.js';
import { API_LOG, AUDIT } from './engine/tables.js';
import { guarded } from '../util/guard.js';
import { StoreFullError, StoreUnavailableError } from '../kernel/errors.js';
import { AuditBacklog } from './audit-backlog.js';

function pathOnly(req: Request): string {
  const path = req.originalUrl.split('?')[0] ?? '';
  return path.length > 300 ? `${path.slice(0, 300)}…` : path;
}

/** Writes one api_log record when an /api response has been sent; never delays the response. */
export function apiLog(store: Store, logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    res.on(
      'close',
      guarded(onError(logger, 'api log'), () => {
        const record = {
          type: API_LOG,
          ts: new Date().toISOString(),
          direction: 'inbound',
          request_id: res.locals.request_id ?? null,
          account_id: res.locals.account_id ?? null,
          key_id: res.locals.key_id ?? null,
          key_prefix: res.locals.key_prefix ?? null,
          method: req.method,
          path: pathOnly(req),
          status: res.statusCode,
          latency_ms: Math.round(Number(process.hrtime.bigint() - started) / 1e3) / 1e3,
          ip: clientAddress(req) ?? null,
          ...(res.locals.txn_id ? { txn_id: res.locals.txn_id } : {}),
        };
        store
          .transact((tx) => tx.history(record))
          .catch((error: unknown) => {
            // Refused by the store (database down, disk full): counted in its outage's or the
            // full disk's log lines and metrics, not a line each.
            if (error instanceof StoreUnavailableError || error instanceof StoreFullError) return;
            if ((error as Error).name !== 'StoreClosedError')
              logger.warn({ msg: 'could not write an API log record', err: error });
          });
      }),
    );
    next();
  };
}

/** Bodies of admin calls hold no secrets (emails, amounts, references, reasons, addresses); bounded anyway. */
function details(body: unknown): unknown {
  if (body === undefined || body === null) return null;
  let text: string;
  try {
    text = JSON.stringify(body);
  } catch {
    return { unserializable: true };
  }
  return text.length <= 2_000 ? body : { truncated: true, bytes: text.length };
}

function onError(logger: Logger, what: string) {
  return (error: unknown) =>
    logger.error({
      msg: `the ${what} listener failed; the record is lost, the process goes on`,
      err: error,
    });
}

export interface AuditEntry {
  action: string;
  account_id: string | null;
  details?: unknown;
}

/** Writes the audit record of an admin change, in the change's own commit (the surface supplies it: who asked, from where). */
export type Audit = (tx: Tx, entry: AuditEntry) => void;

/** An audit record written in the same commit as the admin action it records. */
export function auditInTx(tx: Tx, req: Request, res: Response, entry: AuditEntry): void {
  res.locals.audited = true;
  tx.history({
    type: AUDIT,
    ts: tx.now.toISOString(),
    actor: 'admin',
    action: entry.action,
    account_id: entry.account_id,
    method: req.method,
    path: pathOnly(req),
    status: 200,
    ip: clientAddress(req) ?? null,
    request_id: res.locals.request_id ?? null,
    details: details(entry.details ?? req.body),
  });
}

/**
 * Audits every other admin call that changes something (the accounts room's routes, and
 * refused calls of any route) once its response is sent.
 */
export function auditMiddleware(store: Store, logger: Logger) {
  const backlog = new AuditBacklog(store, logger);
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return next();
    res.on(
      'finish',
      guarded(onError(logger, 'audit'), () => {
        // A call audited in its own commit, unless that commit was refused (503: the store
        // could not commit it, so its record was not written with it).
        if (res.locals.audited && res.statusCode !== 503) return;
        const account_id = /\/accounts\/([^/?]+)/.exec(req.originalUrl)?.[1] ?? null;
        const record = {
          type: AUDIT,
          ts: new Date().toISOString(),
          actor: 'admin',
          action: `${req.method} ${pathOnly(req)}`,
          account_id,
          method: req.method,
          path: pathOnly(req),
          status: res.statusCode,
          ip: clientAddress(req) ?? null,
          request_id: res.locals.request_id ?? null,
          details: details(req.body),
        };
        backlog.write(record);
      }),
    );
    next();
  };
}
