// What the payments routes share: the app's dependencies plus the engine and the sender.
import type { AppDeps } from '../app.js';
import type { PaymentEngine } from './engine.js';
import type { PaymentsConfig } from './config.js';
import type { WebhookSender } from './webhooks.js';

export interface PaymentsContext extends Omit<AppDeps, 'payments'> {
  settings: PaymentsConfig;
  engine: PaymentEngine;
  webhooks: WebhookSender;
}
