// The arithmetic of spend control, pure and unit-tested: integer micro-units, the worst case of a
// request as the gateway reserves it, and the UTC day a spend belongs to.
import type { ModelPrice } from './client.js';

export function toMicros(units: number): number {
  return Math.round(units * 1_000_000);
}

export function fromMicros(micros: number): number {
  return micros / 1_000_000;
}

/** The most a request can cost: prompt tokens at the input price plus every allowed output token. */
export function worstCaseMicros(
  price: ModelPrice,
  promptTokens: number,
  maxTokens: number,
): number {
  return (
    Math.ceil((promptTokens * price.inputMicrosPerMillion) / 1_000_000) +
    Math.ceil((maxTokens * price.outputMicrosPerMillion) / 1_000_000)
  );
}

export function utcDay(now = new Date()): string {
  return now.toISOString().slice(0, 10);
}

/** Characters of the messages, for the worst case's prompt estimate. */
export function promptChars(messages: ReadonlyArray<{ content: string }>): number {
  return messages.reduce((sum, m) => sum + m.content.length, 0);
}
