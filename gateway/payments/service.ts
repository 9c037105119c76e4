// A payment service as a module (issue #38): everything the payments room needs of one
// service, in one object its folder exports (payments/<service>/service.ts) and services.ts
// lists. payments/index.ts registers every service of the list the same way; nothing outside
// payments/ names a service (the other rooms read `Payments.services`).
//
// The interface is `ServiceModule` because `PaymentService` already names a service's code
// (providers/types.ts: what a provider is asked to serve), in some forty places.
import type { Router } from 'express';
import type { RouteDoc } from '../http/openapi.js';
import type { TableName } from '../store/state.js';
import type { Store, Tx } from '../store/types.js';
import type { PaymentsConfig } from './config.js';
import type { PaymentsContext, ServiceSummary } from './context.js';
import type { Renderer } from './engine/engine.js';
import type { PruneTarget } from './engine/prune.js';
import type { PaymentTxn, TxnStatus } from './engine/tables.js';

/**
 * One payment service. Its transactions are the engine's (one table, `payment_txns`, one set
 * of statuses and moves: engine/tables.ts TXN_STATUSES and engine/transactions.ts
 * TRANSITIONS); what a service adds is here.
 */
export interface ServiceModule extends ServiceSummary {
  /** Its /api routes (each authorizes the account for `code`). */
  api(ctx: PaymentsContext): Router;
  /** Its /admin routes, mounted after the room's own. */
  admin?(ctx: PaymentsContext): Router;
  /** Its answer for one of its transactions (the engine's renderer, stored as the idempotent reply). */
  renderer(ctx: Pick<PaymentsContext, 'public_url'>): Renderer;
  /** Its own bookkeeping inside the commit that moves one of its transactions from `from`. */
  onTransition?(tx: Tx, txn: PaymentTxn, from: TxnStatus): void;
  /**
   * Whether a transaction a provider accepted and that then failed waits for the customer's
   * consent before its money goes back (refund_pending), instead of being refunded at once.
   */
  refundNeedsConsent?(txn: PaymentTxn): boolean;
  /** Its own tables' bounds: the rows no reader will use again, pruned by the room's pass. */
  prune?(ctx: PaymentsContext): Array<PruneTarget<TableName>>;
  /** Builds the indexes its reads need (`store.indexBy`), when the room is made, before any request. */
  indexes?(store: Store): void;
  /** Its routes' documents kept in its folder (GET /openapi.json). */
  route_docs?(settings: PaymentsConfig): RouteDoc[];
}
