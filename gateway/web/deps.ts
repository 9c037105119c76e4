// What the dashboard needs: the shared services, plus the payments room when it is mounted
// (reports and the admin console's payments sections call its services).
import type { RoomDeps } from '../deps.js';
import type { Payments } from '../payments/index.js';

export interface WebDeps extends RoomDeps {
  payments?: Payments;
}
