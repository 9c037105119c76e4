// The top-up pay page's script (/wallet/topups/:id/pay), served from the gateway like the
// dashboard's own: it opens the payment provider's checkout (its script, loaded beside this
// one) with the options the top-ups room made, and comes back to /wallet?topup=<id> when the
// provider says the payment went through. The wallet is credited by the provider's verified
// webhook, never by this page. Without the provider's script it says so; nothing is charged.
import { createHash } from 'node:crypto';

export const CHECKOUT_JS = `
'use strict';
(() => {
  const button = document.getElementById('pay');
  if (!button) return;
  const status = document.getElementById('pay-status');
  const say = (text) => { if (status) status.textContent = text; };
  const checkout = JSON.parse(button.getAttribute('data-checkout'));
  const back = button.getAttribute('data-return');
  // Each provider's browser API, by the name the top-ups room gives it.
  const OPENERS = {
    razorpay: (options, done, dismissed) => {
      if (typeof window.Razorpay !== 'function') return false;
      new window.Razorpay(Object.assign({}, options, {
        redirect: false,
        handler: done,
        modal: { ondismiss: dismissed },
      })).open();
      return true;
    },
    // Cashfree's JS SDK v3: the checkout takes the whole tab and comes back to returnUrl.
    cashfree: (options) => {
      if (typeof window.Cashfree !== 'function') return false;
      window.Cashfree({ mode: options.mode }).checkout({
        paymentSessionId: options.paymentSessionId,
        returnUrl: options.returnUrl,
        redirectTarget: '_self',
      });
      return true;
    },
  };
  button.addEventListener('click', () => {
    if (checkout.redirect_url) { window.location.assign(checkout.redirect_url); return; }
    const open = OPENERS[checkout.provider];
    const opened = open && open(
      checkout.options,
      () => { say('Paid. Waiting for the confirmation…'); window.location.assign(back); },
      () => say('The payment window was closed; nothing was charged. Press Pay to try again.'),
    );
    if (!opened) say('The payment window did not load (a blocker or the network may be in the way). Reload the page to try again; nothing was charged.');
  });
  button.disabled = false;
})();
`;

export const CHECKOUT_JS_PATH = `/assets/checkout-${createHash('sha256').update(CHECKOUT_JS).digest('hex').slice(0, 12)}.js`;
