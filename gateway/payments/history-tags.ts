// What the store's history indexes tag payments records with (store/history-tags.ts): the
// services and statuses of a transaction and the service an API request belongs to. The
// position of each name is its code on disk (JSON-file indexes) and in PostgreSQL
// (`aihub.history.aux`): append only, never reorder.
import type { HistoryTags } from '../store/history-tags.js';
import type { HistoryRecord } from '../store/state.js';

/** The services, by code (index + 1). */
const SERVICES = ['recharge', 'dmt', 'pan', 'bills'] as const;

/** The path prefixes of each service's API, in SERVICES' order. */
const SERVICE_PATHS: ReadonlyArray<readonly string[]> = [
  ['/api/recharge', '/api/operators'],
  ['/api/dmt/'],
  ['/api/pan-find'],
  ['/api/bills/'],
];

/** A transaction's statuses, in the order their codes were given (append only). */
const STATUSES = [
  'pending',
  'success',
  'failed',
  'refunded',
  'reversed',
  'refund_pending',
  'on_hold',
] as const;

export const PAYMENT_HISTORY_TAGS: HistoryTags = {
  services: SERVICES,
  statuses: STATUSES,
  logService(record: HistoryRecord): string | null {
    const path = typeof record.path === 'string' ? record.path : '';
    const at = SERVICE_PATHS.findIndex((prefixes) => prefixes.some((p) => path.startsWith(p)));
    return at === -1 ? null : SERVICES[at]!;
  },
};
