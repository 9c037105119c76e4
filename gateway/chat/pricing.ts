// Per-token prices: pure integer math on micro-units. A request's cost is rounded up to
// the next micro-unit once, after input and output are added, so no sum of floats or of
// per-token roundings ever enters the ledger.
import { assertMicros } from '../util/money.js';

export interface Price {
  input_micros_per_million: number;
  output_micros_per_million: number;
}

const MILLION = 1_000_000n;

export function costMicros(price: Price, prompt_tokens: number, completion_tokens: number): number {
  assertTokens(prompt_tokens);
  assertTokens(completion_tokens);
  const total =
    BigInt(prompt_tokens) * BigInt(price.input_micros_per_million) + BigInt(completion_tokens) * BigInt(price.output_micros_per_million);
  const micros = Number((total + MILLION - 1n) / MILLION);
  assertMicros(micros);
  return micros;
}

function assertTokens(tokens: number): void {
  if (!Number.isSafeInteger(tokens) || tokens < 0) throw new Error(`invariant: token count ${tokens} is not a non-negative integer`);
}
