// The providers room: `createProviders(deps)` builds each payment service's ordered provider
// list from the configuration (sandbox providers are skipped in live mode) and the SMS sender
// of remitter OTPs. main.ts builds it and hands it to the payments room.
import type { RoomDeps } from '../deps.js';
import type { ProviderConfig } from './config.js';
import { buildProvider } from './registry.js';
import { buildSmsSender, type SmsSender } from './sms.js';
import type { PaymentProvider, PaymentService } from './types.js';

export interface Providers {
  /** Each payment service's ordered provider list (failover runs down it). */
  lists: Record<PaymentService, PaymentProvider[]>;
  /** Sends remitter OTPs in live mode; null when none is configured. */
  sms: SmsSender | null;
}

/**
 * The room from the configuration. `given` (tests: scripted providers or SMS sender) takes
 * the place of what the configuration would build for that service; nothing else is built
 * for it.
 */
export function createProviders(
  deps: Pick<RoomDeps, 'config' | 'clock' | 'logger'>,
  given: {
    lists?: Partial<Record<PaymentService, PaymentProvider[]>> | undefined;
    sms?: SmsSender | null | undefined;
  } = {},
): Providers {
  const { config, clock, logger } = deps;
  const configured = config.payments.providers;
  const list = (service: PaymentService) =>
    given.lists?.[service] ??
    buildProviders(configured[service], {
      mode: config.mode,
      now: () => clock.now(),
      warn: (message) => logger.warn({ msg: message }),
    });
  // The services are the configuration's (payments.providers names each one) and the given
  // lists': this room names none of them.
  const services = new Set([...Object.keys(configured), ...Object.keys(given.lists ?? {})]);
  return {
    lists: Object.fromEntries(
      [...services].map((service) => [service, list(service as PaymentService)]),
    ) as Record<PaymentService, PaymentProvider[]>,
    sms: given.sms !== undefined ? given.sms : buildSmsSender(config.payments.dmt.otp.sms),
  };
}

export function buildProviders(
  configs: readonly ProviderConfig[],
  options: {
    mode: 'sandbox' | 'live';
    now: () => Date;
    warn: (message: string) => void;
    env?: NodeJS.ProcessEnv;
  },
): PaymentProvider[] {
  const context = { ...options, env: options.env ?? process.env };
  const providers: PaymentProvider[] = [];
  for (const config of configs) {
    const provider = buildProvider(config, context);
    if (provider) providers.push(provider);
  }
  return providers;
}
