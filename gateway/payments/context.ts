// What the payments routes share: the app's dependencies plus the engine and the sender.
import type { RoomDeps } from '../deps.js';
import type { PaymentEngine } from './engine/engine.js';
import type { PaymentsConfig } from './config.js';
import type { WebhookSender } from './engine/webhooks.js';
import type { PaymentProvider, PaymentService } from '../providers/types.js';
import type { SmsSender } from '../providers/sms.js';
import type { Pricing } from './network/pricing.js';

export interface PaymentsContext extends RoomDeps {
  settings: PaymentsConfig;
  engine: PaymentEngine;
  /** What a payment earns (schemes, overrides, TDS) and the GST in its fee. */
  pricing: Pricing;
  webhooks: WebhookSender;
  /** Each service's ordered provider list (lookups such as bill fetch use it directly). */
  providers: Record<PaymentService, PaymentProvider[]>;
  /** Sends remitter OTPs in live mode; null when none is configured. */
  sms: SmsSender | null;
  /** Registers work to cancel when the room stops (lookups in flight). */
  onStop(fn: () => void): void;
}
