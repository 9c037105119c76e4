// What the OpenAPI documents of the payment services share: the refusals any payment
// (recharge, a transfer, a bill, a PAN lookup) may answer, from the engine that runs them all.

/** The refusals of any payment route: the wallet, the service, a retry, the providers. */
export const PAYMENT_ERRORS = {
  402: 'insufficient_balance: the wallet cannot cover amount and charges; nothing is held',
  403: 'service_inactive, or ip_not_allowed',
  409: 'idempotency_conflict (same key, another request), or duplicate_transaction (same subject and amount within the window)',
  503: 'no provider configured, or shutting down',
};
