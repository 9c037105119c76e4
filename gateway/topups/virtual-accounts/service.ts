// Virtual accounts for payments accounts: an account number + IFSC (and a UPI ID where the
// provider gives one) at the provider that credits the account's wallet by itself.
// - load details: made at the provider on the account's first ask, once even when many ask
//   at once (one ask in flight per account in this gateway, and a claim across gateways),
//   stored, then served from the store;
// - a credit (`virtual_account.credited`): checked with the provider's own fetch of the
//   payment (captured, this amount and currency, this virtual account), then credited once by
//   the provider's payment id, the payer's details kept on the top-up it becomes;
// - with `topups.virtual_accounts.hold_third_party`, a transfer from someone other than the
//   account holder (payer.ts) is held for review instead: nothing is credited until an
//   operator releases it (credited then) or returns it (never credited; the operator sends
//   the money back at the provider).
import { ApiError, notFound } from '../../http/errors.js';
import type { Logger } from '../../log.js';
import { FUNDING_TOPUP, creditWallet } from '../../ledger/ledger.js';
import type { Store, Tx } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { microsToUnits } from '../../util/money.js';
import type { Config } from '../../config.js';
import { creditTopup, moveTopup, paymentKey, raiseAlert } from '../postings.js';
import type { Topup } from '../tables.js';
import { rememberRecent } from '../tables.js';
import type {
  ProviderPayment,
  TopupEvent,
  TopupProvider,
  TopupProviderName,
  VirtualAccount,
} from '../types.js';
import { thirdPartyReason } from './payer.js';
import type { TopupVirtualAccount } from './tables.js';

type Credited = Extract<TopupEvent, { type: 'virtual_account.credited' }>;

export interface VirtualAccountDeps {
  config: Config;
  store: Store;
  logger: Logger;
  provider: TopupProvider | null;
}

/** How long a gateway holds the right to make an account's virtual account. */
const CREATE_LEASE_MS = 30_000;
/** How long an ask waits for another gateway that is making the same account's. */
const WAIT_FOR_OTHER_MS = 20_000;

/** The hold marker of a payment held for review: once per payment, and no refund finds it credited. */
const heldKey = (provider: TopupProviderName, payment_id: string) =>
  `${provider}:held:${payment_id}`;

export class VirtualAccounts {
  private readonly making = new Map<string, Promise<TopupVirtualAccount>>();

  constructor(private readonly deps: VirtualAccountDeps) {}

  private provider(): TopupProvider & Required<Pick<TopupProvider, 'createVirtualAccount'>> {
    const { provider, config } = this.deps;
    if (!provider)
      throw new ApiError(
        409,
        'topups_not_configured',
        config.mode === 'sandbox'
          ? 'no payment gateway is configured (topups.provider): there is no virtual account to pay into'
          : 'no payment gateway is configured (topups.provider): fund the wallet by bank transfer as the /wallet page explains',
      );
    if (!provider.createVirtualAccount)
      throw new ApiError(
        409,
        'virtual_accounts_unavailable',
        `${provider.name} gives no virtual accounts here`,
      );
    return provider as TopupProvider & Required<Pick<TopupProvider, 'createVirtualAccount'>>;
  }

  /** The account's virtual account: from the store, else made at the provider (once). */
  async loadDetails(account_id: string): Promise<TopupVirtualAccount> {
    const provider = this.provider();
    const stored = await this.deps.store.fetch('topup_virtual_accounts', account_id);
    if (stored && stored.provider === provider.name) return stored;
    let making = this.making.get(account_id);
    if (!making) {
      making = this.make(provider, account_id).finally(() => this.making.delete(account_id));
      this.making.set(account_id, making);
    }
    return making;
  }

  private async make(
    provider: TopupProvider & Required<Pick<TopupProvider, 'createVirtualAccount'>>,
    account_id: string,
  ): Promise<TopupVirtualAccount> {
    const { store } = this.deps;
    const kind = 'topup-virtual-account';
    const deadline = Date.now() + WAIT_FOR_OTHER_MS;
    while ((await store.claim(kind, [account_id], CREATE_LEASE_MS)).length === 0) {
      // Another gateway is making it: wait for its row.
      const made = await store.fetch('topup_virtual_accounts', account_id);
      if (made && made.provider === provider.name) return made;
      if (Date.now() > deadline)
        throw new ApiError(
          503,
          'provider_unavailable',
          'the virtual account is being made; ask again shortly',
          null,
          'api_error',
        );
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    try {
      const made = await store.fetch('topup_virtual_accounts', account_id);
      if (made && made.provider === provider.name) return made;
      const account = await store.fetch('accounts', account_id);
      if (!account) throw notFound(`no account ${account_id}`, 'account_not_found');
      const kyc = await store.fetch('kyc_submissions', account_id);
      let created;
      try {
        created = await provider.createVirtualAccount({
          account_id,
          name: kyc?.name ?? account.name,
          email: account.email,
        });
      } catch (error) {
        this.deps.logger.warn({
          msg: 'virtual account not made',
          account_id,
          provider: provider.name,
          reason: (error as Error).message,
        });
        throw new ApiError(
          502,
          'provider_error',
          'the payment gateway did not make a virtual account; try again',
          null,
          'api_error',
        );
      }
      return await store.transact((tx) => record(tx, provider.name, account_id, created));
    } finally {
      await store.release(kind, [account_id]);
    }
  }

  /**
   * A verified `virtual_account.credited`: checked with the provider, then credited (or held)
   * once by its payment id. Throws ProviderCallError when the provider could not be asked.
   */
  async credited(provider: TopupProvider, event: Credited): Promise<void> {
    const { store, logger } = this.deps;
    const account_id = await store.fetch(
      'topup_va_owners',
      `${provider.name}:${event.virtual_account_id}`,
    );
    const alert = (reason: string, detail: string, account: string | null = account_id ?? null) =>
      store.transact((tx) =>
        raiseAlert(tx, {
          provider: provider.name,
          reason,
          topup_id: null,
          account_id: account,
          order_id: null,
          payment_id: event.payment_id,
          detail,
        }),
      );
    if (account_id === undefined) {
      await alert(
        'unknown_virtual_account',
        `a credit to ${event.virtual_account_id}, which no account has`,
      );
      return;
    }
    const payment = await provider.fetchPayment(event.payment_id);
    const mismatch = creditMismatch(this.deps.config.currency, event, payment);
    if (mismatch || !payment) {
      await alert(
        mismatch?.reason ?? 'unknown_payment',
        mismatch?.detail ?? 'the provider knows no such payment',
      );
      return;
    }
    const outcome = await store.transact((tx) =>
      this.creditOnce(tx, provider.name, account_id, event, payment),
    );
    logger.info({
      msg: `virtual account credit ${outcome}`,
      account_id,
      provider: provider.name,
      payment_id: event.payment_id,
    });
  }

  private creditOnce(
    tx: Tx,
    provider: TopupProviderName,
    account_id: string,
    event: Credited,
    payment: ProviderPayment,
  ): 'credited' | 'held' | 'duplicate' | 'refused' {
    if (tx.get('topup_payments', paymentKey(provider, payment.payment_id))) return 'duplicate';
    if (tx.get('topup_payments', heldKey(provider, payment.payment_id))) return 'duplicate';
    const payer = payment.payer ?? event.payer;
    const at = tx.now.toISOString();
    const topup: Topup = {
      id: newId('tup'),
      account_id,
      provider,
      // The provider's own order for the transfer, if it makes one (the credit is checked against it).
      order_id: payment.order_id,
      amount_micros: payment.amount_micros,
      fee_micros: 0,
      fee_gst_micros: 0,
      fee_tax: null,
      method: payment.method ?? 'bank_transfer',
      currency: payment.currency,
      status: 'created',
      payment_id: null,
      reversed_micros: 0,
      owed_micros: 0,
      checkout: null,
      payer,
      note: `a transfer into virtual account ${event.virtual_account_id}`,
      created_at: at,
      updated_at: at,
      // Never polled: a transfer has arrived already.
      checks: { count: 0, next_at: null },
      history: [{ status: 'created', at, note: 'transfer into the virtual account' }],
    };
    tx.set('topups', topup.id, topup);
    rememberRecent(tx, account_id, topup.id);
    const reason = this.deps.config.topups.virtual_accounts.hold_third_party
      ? thirdPartyReason(holderOf(tx, account_id), payer)
      : null;
    if (reason === null) return creditTopup(tx, topup.id, payment, payer);
    tx.set('topup_payments', heldKey(provider, payment.payment_id), {
      key: heldKey(provider, payment.payment_id),
      topup_id: topup.id,
      account_id,
      amount_micros: payment.amount_micros,
      at,
    });
    moveTopup(
      tx,
      { ...topup, payment_id: payment.payment_id },
      'held',
      `held for review: ${reason}`,
    );
    raiseAlert(tx, {
      provider,
      reason: 'held_for_review',
      topup_id: topup.id,
      account_id,
      order_id: payment.order_id,
      payment_id: payment.payment_id,
      detail: `${microsToUnits(payment.amount_micros)} ${payment.currency} ${reason}: POST /admin/topups/${topup.id}/release or /return`,
    });
    return 'held';
  }

  /** The operator credits a held transfer (audited by the caller's commit). */
  release(tx: Tx, topup_id: string): Topup {
    const topup = heldTopup(tx, topup_id);
    const key = paymentKey(topup.provider, topup.payment_id!);
    if (tx.get('topup_payments', key))
      throw new ApiError(
        409,
        'already_credited',
        `payment ${topup.payment_id} was credited already`,
      );
    creditWallet(tx, {
      account_id: topup.account_id,
      amount_micros: topup.amount_micros,
      from: FUNDING_TOPUP,
      memo: `Top-up ${topup.id} (${topup.provider} ${topup.payment_id}), released after review`,
      ref: topup.id,
    });
    tx.set('topup_payments', key, {
      key,
      topup_id: topup.id,
      account_id: topup.account_id,
      amount_micros: topup.amount_micros,
      at: tx.now.toISOString(),
    });
    return moveTopup(
      tx,
      topup,
      'credited',
      `${microsToUnits(topup.amount_micros)} ${topup.currency} credited after review (${topup.payment_id})`,
    );
  }

  /** The operator refuses a held transfer: never credited; the money goes back to the payer at the provider. */
  giveBack(tx: Tx, topup_id: string, note: string): Topup {
    const topup = heldTopup(tx, topup_id);
    return moveTopup(
      tx,
      topup,
      'returned',
      `not credited after review${note ? `: ${note}` : ''}; to be returned to the payer at ${topup.provider}`,
    );
  }
}

/** Stores a virtual account the provider made (or the one another gateway stored first). */
function record(
  tx: Tx,
  provider: TopupProviderName,
  account_id: string,
  created: VirtualAccount,
): TopupVirtualAccount {
  const again = tx.get('topup_virtual_accounts', account_id);
  if (again && again.provider === provider) return again;
  const row: TopupVirtualAccount = {
    ...created,
    account_id,
    provider,
    created_at: tx.now.toISOString(),
  };
  tx.set('topup_virtual_accounts', account_id, row);
  tx.set('topup_va_owners', `${provider}:${created.virtual_account_id}`, account_id);
  tx.history({
    type: 'audit',
    ts: tx.now.toISOString(),
    actor: 'topups',
    action: 'topup.virtual_account.created',
    account_id,
    detail: `${provider} ${created.virtual_account_id} ${created.ifsc}`,
  });
  return row;
}

function heldTopup(tx: Tx, topup_id: string): Topup {
  const topup = /^tup_[0-9a-f]{24}$/.test(topup_id) ? tx.get('topups', topup_id) : undefined;
  if (!topup) throw notFound(`no top-up ${topup_id.slice(0, 64)}`, 'topup_not_found');
  if (topup.status !== 'held' || topup.payment_id === null)
    throw new ApiError(
      409,
      'topup_not_held',
      `top-up ${topup.id} is ${topup.status}, not held for review`,
    );
  return topup;
}

/** The account holder as the payer check sees them: the eKYC name, else the account's. */
function holderOf(tx: Tx, account_id: string) {
  const names = [tx.get('kyc_submissions', account_id)?.name, tx.get('accounts', account_id)?.name];
  return { names: names.filter((n): n is string => typeof n === 'string'), bank_accounts: [] };
}

/** Why the provider's own answer does not confirm the credit the webhook announced, or null. */
function creditMismatch(
  currency: string,
  event: Credited,
  payment: ProviderPayment | null,
): { reason: string; detail: string } | null {
  if (!payment) return null;
  if (payment.status !== 'captured')
    return {
      reason: 'status_mismatch',
      detail: `payment ${payment.payment_id} is ${payment.status}, not captured`,
    };
  if (payment.currency !== currency || event.currency !== currency)
    return {
      reason: 'currency_mismatch',
      detail: `paid in ${payment.currency}, wallets are in ${currency}`,
    };
  if (payment.amount_micros !== event.amount_micros)
    return {
      reason: 'amount_mismatch',
      detail: `the webhook says ${microsToUnits(event.amount_micros)}, the provider ${microsToUnits(payment.amount_micros)}`,
    };
  if (
    payment.virtual_account_id !== undefined &&
    payment.virtual_account_id !== event.virtual_account_id
  )
    return {
      reason: 'virtual_account_mismatch',
      detail: `the payment went to ${payment.virtual_account_id}, not ${event.virtual_account_id}`,
    };
  return null;
}
