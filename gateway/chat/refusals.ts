// Refusals whose wording clients parse: each carries its figures, so that a protocol words
// it as its own API does (Anthropic's "prompt is too long: N tokens > M maximum" starts
// Claude Code's compaction, "model: <id>" its model fallback); the default wording is
// OpenAI's chat completions.
import { ApiError } from '../http/errors.js';
import { microsToUnits } from '../util/money.js';
import { TIER_IDS } from './config.js';

/** The prompt leaves no room for output in the tier's context window. */
export class ContextLengthError extends ApiError {
  constructor(
    readonly prompt_tokens: number,
    /** The most prompt tokens the tier accepts (its context window less one output token). */
    readonly max_prompt_tokens: number,
  ) {
    super(
      400,
      'context_length_exceeded',
      `This model's maximum context length is ${max_prompt_tokens + 1} tokens. However, your messages resulted in ${prompt_tokens} tokens. Please reduce the length of the messages.`,
      'messages',
      'invalid_request_error',
    );
  }
}

/** A model id that names no tier. */
export class ModelNotFoundError extends ApiError {
  constructor(readonly model: string) {
    super(
      404,
      'model_not_found',
      `The model \`${model.slice(0, 100)}\` does not exist or you do not have access to it; use one of ${TIER_IDS.join(', ')}`,
      'model',
      'invalid_request_error',
    );
  }
}

/** The wallet page with the amount to top up filled in, rounded up to the smallest coin (0.01). */
export function topUpUrl(public_url: string, shortfall_micros: number): string {
  const cents = Math.max(1, Math.ceil(shortfall_micros / 10_000));
  const amount = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
  return `${public_url}/wallet?amount=${amount}`;
}

/**
 * The wallet cannot cover a request's worst case: 402 `insufficient_balance` whose message,
 * `x_aihub` (and headers, for clients that keep only the error object) name the top-up page
 * with the shortfall filled in, so that the remedy is one click from where the user is.
 */
export class InsufficientBalanceRefusal extends ApiError {
  constructor(
    advice: string,
    figures: {
      request_id: string;
      currency: string;
      public_url: string;
      balance_micros: number;
      required_micros: number;
    },
  ) {
    const shortfall_micros = figures.required_micros - figures.balance_micros;
    const topup_url = topUpUrl(figures.public_url, shortfall_micros);
    const balance = microsToUnits(figures.balance_micros);
    const shortfall = microsToUnits(shortfall_micros);
    super(
      402,
      'insufficient_balance',
      `insufficient balance: this request may cost up to ${microsToUnits(figures.required_micros)} ${figures.currency} (${advice}) and the wallet has ${balance} ${figures.currency}; top up at ${topup_url} (the wallet is ${shortfall} ${figures.currency} short)`,
      null,
      'insufficient_balance',
      {
        'x-aihub-balance': String(balance),
        'x-aihub-shortfall': String(shortfall),
        'x-aihub-topup-url': topup_url,
      },
    );
    this.x_aihub = {
      request_id: figures.request_id,
      balance,
      required: microsToUnits(figures.required_micros),
      shortfall,
      currency: figures.currency,
      topup_url,
    };
    this.help = { description: `Top up ${shortfall} ${figures.currency}`, url: topup_url };
  }
}
