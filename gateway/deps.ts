// What the composition root (main.ts) hands every room: the narrow set of shared services.
// Rooms import this type, never app.ts or main.ts, so the doors between rooms run one way.
import type { Config } from './config.js';
import type { Metrics } from './http/metrics.js';
import type { Clock } from './kernel/clock.js';
import type { Logger } from './log.js';
import type { Store } from './store/types.js';
import type { Sealer } from './util/sealed.js';

export interface RoomDeps {
  config: Config;
  store: Store;
  logger: Logger;
  clock: Clock;
  /** SHA-256 (hex) of the admin token. */
  admin_token_hash: string;
  metrics?: Metrics;
  /** Encryption at rest (AES-256-GCM) of webhook and signing secrets and eKYC documents. */
  sealer: Sealer;
  /**
   * The absolute base URL for links shown to users (the top-up page, receipts). main.ts
   * computes it once, when the listening port is known (port 0 picks one at listen time).
   */
  public_url: () => string;
}
