// Lookups that move no money (a bill fetch, a number's operator, plans, offers, a DTH
// subscriber, a biller's validation of a customer), asked through a service's providers with
// the failover chain: the answer of the first provider that gives one, 404 when it found
// nothing, 503 with Retry-After when none could answer (or none is configured for that kind),
// and 503 when the room is shutting down. Every service's lookup goes through `lookup`.
import { ApiError, notFound } from '../http/errors.js';
import { ChainAbortedError, runLookupChain } from '../providers/chain.js';
import type { LookupRequest, LookupResult } from '../providers/types.js';
import type { PaymentsContext } from './context.js';

export type Found = Extract<LookupResult, { outcome: 'found' }> & { provider: string };

type Ctx = Pick<PaymentsContext, 'providers' | 'clock'>;

/**
 * The first provider's answer to `request`: found, or a 404 with `words.not_found_code` (the
 * provider's own words in the message, after `words.prefix`), or a 503
 * `providers_unavailable` saying `words.unavailable` and what each provider said.
 */
export async function lookup(
  ctx: Ctx,
  signal: AbortSignal,
  request: LookupRequest,
  words: { not_found_code: string; unavailable: string; prefix?: string },
): Promise<Found> {
  let chain: Awaited<ReturnType<typeof runLookupChain>>;
  try {
    chain = await runLookupChain(ctx.providers[request.service], request, {
      now: () => ctx.clock.now(),
      signal,
    });
  } catch (error) {
    if (error instanceof ChainAbortedError)
      throw new ApiError(503, 'shutting_down', 'the gateway is shutting down; retry shortly');
    throw error;
  }
  if (!chain.result) {
    const tried = chain.attempts.map((a) => `${a.provider}: ${a.message}`).join('; ');
    throw new ApiError(
      503,
      'providers_unavailable',
      `${words.unavailable} (${tried || `no provider is configured for ${request.kind} lookups`}); retry later`,
      null,
      null,
      { 'Retry-After': '30' },
    );
  }
  if (chain.result.outcome === 'not_found')
    throw notFound(`${words.prefix ?? ''}${chain.result.message}`, words.not_found_code);
  return { ...chain.result, provider: chain.provider };
}

/** A shutdown signal for a room's lookups in flight (cut short when the room stops). */
export function lookupSignal(ctx: Pick<PaymentsContext, 'onStop'>): AbortSignal {
  const shutdown = new AbortController();
  ctx.onStop(() => shutdown.abort());
  return shutdown.signal;
}
