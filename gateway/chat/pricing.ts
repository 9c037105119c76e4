// Per-token prices: pure integer math on micro-units. A request's cost is rounded up to
// the next micro-unit once, after input, cached input and output are added, so no sum of
// floats or of per-token roundings ever enters the ledger.
import { assertMicros } from '../util/money.js';

export interface Price {
  input_micros_per_million: number;
  /** Prompt tokens the upstream read from its cache; a tenth of the input price when unset. */
  cached_input_micros_per_million?: number;
  output_micros_per_million: number;
  /** Reasoning tokens (part of the completion); billed at the output price when unset. */
  reasoning_micros_per_million?: number;
  /** Prompt tokens written to the upstream's cache (Anthropic bills them above input); the input price when unset. */
  cache_write_micros_per_million?: number;
}

export const FREE: Required<
  Omit<Price, 'reasoning_micros_per_million' | 'cache_write_micros_per_million'>
> = {
  input_micros_per_million: 0,
  cached_input_micros_per_million: 0,
  output_micros_per_million: 0,
};

const MILLION = 1_000_000n;

/** The default cached-input price: a tenth of the input price, rounded up to a micro-unit. */
export function defaultCachedPrice(input_micros_per_million: number): number {
  return Math.ceil(input_micros_per_million / 10);
}

export function cachedPrice(price: Price): number {
  return (
    price.cached_input_micros_per_million ?? defaultCachedPrice(price.input_micros_per_million)
  );
}

/** The most a request may cost: every completion token at the dearer of the output and reasoning prices. */
export function worstCostMicros(
  price: Price,
  prompt_tokens: number,
  completion_tokens: number,
): number {
  const output = Math.max(price.output_micros_per_million, price.reasoning_micros_per_million ?? 0);
  const input = Math.max(price.input_micros_per_million, price.cache_write_micros_per_million ?? 0);
  return costMicros(
    {
      input_micros_per_million: input,
      cached_input_micros_per_million: cachedPrice(price),
      output_micros_per_million: output,
    },
    prompt_tokens,
    completion_tokens,
  );
}

/**
 * Cost of a request; `cached_tokens` (part of `prompt_tokens`) are billed at the cached price,
 * `cache_write_tokens` (part of `prompt_tokens` too) at the cache-write price and
 * `reasoning_tokens` (part of `completion_tokens`) at the reasoning price where there are ones.
 */
export function costMicros(
  price: Price,
  prompt_tokens: number,
  completion_tokens: number,
  cached_tokens = 0,
  reasoning_tokens = 0,
  cache_write_tokens = 0,
): number {
  assertTokens(prompt_tokens);
  assertTokens(completion_tokens);
  assertTokens(cached_tokens);
  assertTokens(reasoning_tokens);
  assertTokens(cache_write_tokens);
  const cached = Math.min(cached_tokens, prompt_tokens);
  const written = Math.min(cache_write_tokens, prompt_tokens - cached);
  const write_price = price.cache_write_micros_per_million ?? price.input_micros_per_million;
  const reasoning = Math.min(reasoning_tokens, completion_tokens);
  const reasoning_price = price.reasoning_micros_per_million ?? price.output_micros_per_million;
  const total =
    BigInt(prompt_tokens - cached - written) * BigInt(price.input_micros_per_million) +
    BigInt(written) * BigInt(write_price) +
    BigInt(cached) * BigInt(cachedPrice(price)) +
    BigInt(completion_tokens - reasoning) * BigInt(price.output_micros_per_million) +
    BigInt(reasoning) * BigInt(reasoning_price);
  const micros = Number((total + MILLION - 1n) / MILLION);
  assertMicros(micros);
  return micros;
}

function assertTokens(tokens: number): void {
  if (!Number.isSafeInteger(tokens) || tokens < 0)
    throw new Error(`invariant: token count ${tokens} is not a non-negative integer`);
}
