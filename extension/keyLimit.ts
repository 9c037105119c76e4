// The key's own spending limit beside the balance (issue #39): what GET /v1/key says, worded
// for the status bar. Pure; unit-tested.
import { formatMoney } from './chat/protocol.js';

/** What the status bar reads of GET /v1/key's `data`. */
export interface KeyLimitInfo {
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: 'daily' | 'weekly' | 'monthly' | null;
  currency?: string;
}

/** " · key ₹1.20 left today" for a key with a limit; "" for one without (or an older gateway's answer). */
export function keyLimitText(info: KeyLimitInfo | undefined, currency: string): string {
  if (!info || info.limit === null || info.limit_remaining === null) return '';
  const period =
    info.limit_reset === 'daily'
      ? ' today'
      : info.limit_reset === 'weekly'
        ? ' this week'
        : info.limit_reset === 'monthly'
          ? ' this month'
          : '';
  return ` · key ${formatMoney(info.limit_remaining, info.currency ?? currency)} left${period}`;
}

/** The tooltip's sentence for it. */
export function keyLimitTooltip(info: KeyLimitInfo | undefined, currency: string): string {
  if (!info || info.limit === null || info.limit_remaining === null) return '';
  const c = info.currency ?? currency;
  return ` This key's own limit: ${formatMoney(info.limit_remaining, c)} left of ${formatMoney(info.limit, c)}${info.limit_reset ? ` (resets ${info.limit_reset})` : ''}; a top-up does not raise it.`;
}
