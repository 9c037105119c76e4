// Bill payment (BBPS) as the payments room registers it (service.ts, services.ts): a bill
// freed by a failed payment, its fetched bills and complaints pruned once past their rules.
import { pruneTarget } from '../engine/prune.js';
import { billFetchExpired } from '../engine/tables.js';
import type { ServiceModule } from '../service.js';
import { billsOnTransition } from './bookkeeping.js';
import { complaintExpired } from './complaints.js';
import { billsRouteDocs } from './openapi.js';
import { billsRouter } from './routes.js';
import { renderBillFactory } from './views.js';

export const billsService: ServiceModule = {
  code: 'bills',
  label: 'Bill payment',
  api: billsRouter,
  renderer: ({ public_url }) => renderBillFactory(public_url),
  onTransition: billsOnTransition,
  prune: ({ settings }) => [
    pruneTarget({
      table: 'bill_fetches',
      expired: (_id, bill, tx) => billFetchExpired(bill, tx.now.getTime()),
    }),
    pruneTarget({
      table: 'bill_complaints',
      expired: (_id, complaint, tx) =>
        complaintExpired(complaint, tx.now.getTime(), settings.bills.complaints.keep_ms),
    }),
  ],
  // An account's complaints (its open ones are counted, its list read) by this index.
  indexes: (store) => {
    store.indexBy('bill_complaints', 'account_id');
  },
  route_docs: () => billsRouteDocs(),
};
