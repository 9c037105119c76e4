// A room's own check in `aihub-gateway verify` (the GST documents: payments/invoices/
// verify.ts): each store's verify feeds it every posting and every row of the tables it names,
// in commit order, then asks it for its breaches. The store knows no room: main.ts passes them.
import type { Posting } from './state.js';

export interface ReplayCheck {
  /** The tables whose rows it reads. */
  readonly tables: readonly string[];
  posting(posting: Posting): void;
  /** A row as last written (a later call for the same id replaces it). */
  row(table: string, id: string, value: unknown): void;
  finish(breach: (message: string) => void): void;
}
