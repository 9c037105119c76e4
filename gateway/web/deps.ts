// What the dashboard needs: the shared services, plus the payments room when it is mounted
// (reports and the admin console's payments sections call its services).
import type { RoomDeps } from '../deps.js';
import type { Payments } from '../payments/index.js';
import type { Topups } from '../topups/room.js';

export interface WebDeps extends RoomDeps {
  payments?: Payments;
  /** The top-ups room: /wallet's Top up through the configured payment gateway (live mode). */
  topups?: Topups;
}
