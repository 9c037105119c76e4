// The providers' status callbacks in GET /openapi.json (issue #25, item 13: every route a
// client can call is documented). The caller is a payments provider, not an account: no API
// key, the call proves itself by the provider's signature or token (providers/http/adapter.ts).
import type { RouteDoc } from '../../http/openapi.js';

export function callbackRouteDocs(): RouteDoc[] {
  return [
    {
      tag: 'callbacks',
      auth: 'none',
      method: 'post',
      path: '/api/callbacks/:service/:provider',
      summary:
        "A provider's news of a transaction's status (success, failure, hold, a reversal days after a success), signed or carrying the provider's token as configured; the body is the provider's own format",
      success: {
        status: 200,
        description:
          "{status: true, applied, message}: answered 200 whenever the call is the provider's, so that it stops retrying; applied says whether the status moved",
      },
      errors: {
        400: "invalid_callback: the body cannot be read as the provider's status event",
        401: 'callback_unauthenticated: not signed (or not carrying the token) as the provider is configured',
        404: 'unknown_provider: no provider of that name and service takes callbacks',
      },
    },
  ];
}
