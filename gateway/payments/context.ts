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
  /** The payment services the room serves (services.ts), as the shared parts know them. */
  services: readonly ServiceSummary[];
  /**
   * The /v1 wire protocols (the chat room's names, handed in by main.ts): what the ai-usage
   * report's filter takes; null (a room built without them) takes any name.
   */
  ai_protocols: readonly string[] | null;
  /** Registers work to cancel when the room stops (lookups in flight). */
  onStop(fn: () => void): void;
}

/** What the room's shared parts and the other rooms know of a payment service (service.ts has the rest). */
export interface ServiceSummary {
  /** Its code: `PaymentTxn.service`, the key of `Account.services`, of its provider list and of `revenue:<code>`. */
  code: PaymentService;
  /** Its name for people: the admin console's service switches, the reports' filter. */
  label: string;
}
