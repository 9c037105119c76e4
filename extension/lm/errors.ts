// Which LanguageModelError a gateway failure is, as VS Code's consumers check it
// (`error.code === vscode.LanguageModelError.Blocked.name`). Pure, unit-tested.
import type { GatewayFailure } from '../errors.js';

export type LanguageModelErrorCode = 'NoPermissions' | 'Blocked' | 'NotFound';

/**
 * No key, a rejected, expired or disabled key, a tier the key may not use: NoPermissions. An empty
 * wallet, a key's spending limit, the rate limit, the daily spending cap: Blocked (VS Code's "quota
 * limits exceeded"). An unknown tier: NotFound. Anything else is a plain error with the message.
 */
export function languageModelErrorCode(
  failure: GatewayFailure,
): LanguageModelErrorCode | undefined {
  if (failure.kind === 'missingKey') return 'NoPermissions';
  if (failure.kind !== 'http') return undefined;
  switch (failure.status) {
    case 401:
    case 403:
      return 'NoPermissions';
    case 402:
    case 429:
      return 'Blocked';
    case 404:
      return failure.code === 'model_not_found' ? 'NotFound' : undefined;
    default:
      return undefined;
  }
}
