// What the idempotency crash test and its child share: one account, an engine whose
// provider answers at once (success, a decline or pending, by the number's last digit), and
// a keyed recharge intent.
import { createLogger } from '../../gateway/log.ts';
import { paymentsConfigSchema } from '../../gateway/payments/config.ts';
import { PaymentEngine, type PaymentIntent } from '../../gateway/payments/engine/engine.ts';
import { renderRecharge } from '../../gateway/payments/recharge/views.ts';
import type { PaymentProvider, ProviderResult } from '../../gateway/providers/types.ts';
import type { Store } from '../../gateway/store/types.ts';
import { testAccount } from './store-fixtures.ts';

export const CRASH_ACCOUNT = testAccount('acc_crash');
export const AMOUNT_MICROS = 10_000_000;

/** The number a key recharges: its last digit picks the sandbox outcome (7: declined, 8: pending). */
export function numberOf(key: string): string {
  const digit = [...key].reduce((sum, c) => sum + c.charCodeAt(0), 0) % 10;
  return `987654321${digit}`;
}

/**
 * `hang`: the provider never answers a submission (it calls `hang` first): the process is
 * killed while the provider has the transaction. `status_success`: status checks say it
 * succeeded; else they say it is still queued.
 */
export function keyedEngine(
  store: Store,
  options: { hang?: () => void; status_success?: boolean; first_check_ms?: number } = {},
): PaymentEngine {
  let n = 0;
  const provider: PaymentProvider = {
    name: 'bank',
    timeout_ms: 60_000,
    submit: async (request): Promise<ProviderResult> => {
      if (options.hang) {
        options.hang();
        return new Promise<never>(() => {});
      }
      const last = request.subject.at(-1);
      if (last === '7')
        return { outcome: 'failed', provider_ref: null, code: 'R07', message: 'declined' };
      if (last === '8') return { outcome: 'pending', provider_ref: `P${++n}`, message: 'queued' };
      return { outcome: 'success', provider_ref: `P${++n}`, message: 'done' };
    },
    status: async () =>
      options.status_success
        ? { outcome: 'success', provider_ref: 'P-checked', message: 'done after all' }
        : { outcome: 'pending', provider_ref: null, message: 'still queued' },
  };
  return new PaymentEngine({
    store,
    logger: createLogger('silent'),
    clock: { now: () => new Date() },
    config: paymentsConfigSchema.parse({
      reconcile: { first_check_ms: options.first_check_ms ?? 3_600_000 },
    }),
    providers: { recharge: [provider], dmt: [], pan: [], bills: [] },
    renderers: { recharge: renderRecharge },
    hooks: { onTransition: () => {} },
  });
}

export function keyedIntent(key: string): PaymentIntent {
  const number = numberOf(key);
  return {
    account: CRASH_ACCOUNT,
    service: 'recharge',
    idempotency_key: key,
    client_ref: null,
    request_hash: `recharge:${number}`,
    allow_duplicate: false,
    amount_micros: AMOUNT_MICROS,
    charges_micros: 0,
    commission_micros: 0,
    pay_to: 'provider:recharge',
    subject: number,
    details: { operator: 'X', operator_id: 1 },
    provider_params: {},
  };
}
