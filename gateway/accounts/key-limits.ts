// A key's own limits (issue #39): a spending limit per period, the tiers it may call, an
// expiry and its own rates under the account's. The fields live on the key's row; what a
// limited key has spent lives in `key_spend` (one row per key, written by the settlements and,
// on PostgreSQL, by the holds: chat/key-hold.ts). Periods are the gateway's configured time
// zone's days, weeks (Monday first) and months: India's (UTC+05:30) by default.
import { z } from 'zod';
import { TIER_IDS } from '../catalogue/tiers.js';
import { ApiError } from '../http/errors.js';
import type { Tx } from '../store/types.js';
import { rowOf, table, type ApiKey, type State } from '../store/state.js';
import { unitsMicrosSchema } from '../util/amount-schema.js';
import { microsToUnits } from '../util/money.js';

export const LIMIT_RESETS = ['daily', 'weekly', 'monthly'] as const;
export type LimitReset = (typeof LIMIT_RESETS)[number];

/** What a limited key has spent: in all, and in the current day, week and month (each named by its first day). */
export interface KeySpend {
  total_micros: number;
  day: string;
  day_micros: number;
  week: string;
  week_micros: number;
  month: string;
  month_micros: number;
  /** Held by requests in flight on every gateway (PostgreSQL store; the JSON-file store holds in memory). */
  held_micros: number;
}

declare module '../store/state.js' {
  interface ApiKey {
    /** The most the key may spend per period (or in all, without a reset); absent or null: no limit. */
    limit_micros?: number | null;
    limit_reset?: LimitReset | null;
    /** Tier ids the key may call; absent or null: all. */
    models?: string[] | null;
    expires_at?: string | null;
    /** The key's own rates, under the account's. */
    requests_per_minute?: number | null;
    tokens_per_minute?: number | null;
  }
  interface Tables {
    /** key id → what the key has spent (keys with a limit only). */
    key_spend: Record<string, KeySpend>;
  }
}

/** The configured time zone, as a fixed offset from UTC (`keys.utc_offset` in the config). */
export const keysConfigSchema = z.strictObject({
  utc_offset: z
    .string()
    .regex(/^[+-](0\d|1[0-4]):[0-5]\d$/, 'must be an offset such as +05:30 or -08:00')
    .default('+05:30'),
});

export function offsetMs(utc_offset: string): number {
  const sign = utc_offset.startsWith('-') ? -1 : 1;
  const [hours, minutes] = utc_offset.slice(1).split(':').map(Number) as [number, number];
  return sign * (hours * 60 + minutes) * 60_000;
}

/** Currency units (at most 6 decimals, as AI costs), kept as integer micro-units. */
const limitSchema = unitsMicrosSchema(100_000_000, 6);

/** The limit fields a key is created or changed with (absent: unchanged; null: none). */
export const keyLimitsShape = {
  limit: limitSchema.nullable().optional(),
  limit_reset: z.enum(LIMIT_RESETS).nullable().optional(),
  models: z
    .array(z.enum(TIER_IDS))
    .min(1, 'name at least one tier, or null for all')
    .max(TIER_IDS.length)
    .nullable()
    .optional(),
  expires_at: z.iso
    .datetime({ offset: true, error: 'must be an ISO 8601 time such as 2027-01-31T18:30:00Z' })
    .nullable()
    .optional(),
  requests_per_minute: z.number().int().min(1).max(1_000_000).nullable().optional(),
  tokens_per_minute: z.number().int().min(1).max(1_000_000_000).nullable().optional(),
};

export const createKeyBody = z.strictObject({
  name: z.string().trim().max(100).optional(),
  ...keyLimitsShape,
});
export type CreateKeyInput = z.output<typeof createKeyBody>;

export const patchKeyBody = z
  .strictObject({ name: z.string().trim().max(100).optional(), ...keyLimitsShape })
  .refine((body) => Object.keys(body).length > 0, 'name at least one field to change');

/** The key's limit fields as a request sets them (absent ones left out). */
export function limitFields(input: z.output<typeof patchKeyBody>): Partial<ApiKey> {
  const fields: Partial<ApiKey> = {};
  if (input.limit !== undefined) fields.limit_micros = input.limit;
  if (input.limit_reset !== undefined) fields.limit_reset = input.limit_reset;
  if (input.models !== undefined)
    fields.models = input.models === null ? null : [...new Set(input.models)];
  if (input.expires_at !== undefined)
    fields.expires_at = input.expires_at === null ? null : new Date(input.expires_at).toISOString();
  if (input.requests_per_minute !== undefined)
    fields.requests_per_minute = input.requests_per_minute;
  if (input.tokens_per_minute !== undefined) fields.tokens_per_minute = input.tokens_per_minute;
  return fields;
}

/** The limit fields as the API shows them (currency units). */
export function limitsView(key: ApiKey) {
  return {
    limit: key.limit_micros == null ? null : microsToUnits(key.limit_micros),
    limit_reset: key.limit_reset ?? null,
    models: key.models ?? null,
    expires_at: key.expires_at ?? null,
    requests_per_minute: key.requests_per_minute ?? null,
    tokens_per_minute: key.tokens_per_minute ?? null,
  };
}

/**
 * Changes a key's fields (the admin API, the owner's API, the dashboard), with an audit record
 * naming what changed, in one transaction. A key of another account than `owner` (when
 * given) is no such key; a revoked key cannot be changed.
 */
export function updateKey(
  tx: Tx,
  key_id: string,
  input: z.output<typeof patchKeyBody>,
  actor: string,
  owner?: string,
): ApiKey {
  const key = tx.get('keys', key_id);
  if (!key || (owner !== undefined && key.account_id !== owner))
    throw new ApiError(404, 'key_not_found', `no key ${key_id}`, null, 'invalid_request_error');
  if (key.revoked_at)
    throw new ApiError(
      409,
      'key_revoked',
      `key ${key_id} is revoked`,
      null,
      'invalid_request_error',
    );
  const updated: ApiKey = {
    ...key,
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...limitFields(input),
  };
  tx.set('keys', key_id, updated);
  auditKey(tx, actor, 'key.update', updated);
  return updated;
}

/**
 * The audit record of a key's creation or change, with its limit fields as they now stand; a
 * key given a limit gets its spend row now (the admin's list of keys near their limits walks
 * those rows: limited keys only, never every key).
 */
export function auditKey(tx: Tx, actor: string, action: string, key: ApiKey): void {
  if (key.limit_micros != null && !tx.get('key_spend', key.id)) addHeld(tx, key.id, 0);
  tx.history({
    type: 'audit',
    ts: tx.now.toISOString(),
    actor,
    action,
    account_id: key.account_id,
    detail: JSON.stringify({ key_id: key.id, name: key.name, ...limitsView(key) }),
  });
}

// Periods.

export interface Period {
  /** The period's name: its first day (`2026-12-07`; a week by its Monday; `2026-12` a month). */
  id: string;
  /** When it ends (the next reset), ms since the epoch. */
  ends_ms: number;
}

const DAY_MS = 86_400_000;

/** The day, week and month `now_ms` falls in, in the zone `offset_ms` from UTC. */
export function periodsAt(now_ms: number, offset_ms: number): Record<LimitReset, Period> {
  const local = new Date(now_ms + offset_ms);
  const y = local.getUTCFullYear();
  const m = local.getUTCMonth();
  const day_start = Date.UTC(y, m, local.getUTCDate());
  const monday = day_start - ((local.getUTCDay() + 6) % 7) * DAY_MS;
  const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return {
    daily: { id: date(day_start), ends_ms: day_start + DAY_MS - offset_ms },
    weekly: { id: date(monday), ends_ms: monday + 7 * DAY_MS - offset_ms },
    monthly: { id: date(day_start).slice(0, 7), ends_ms: Date.UTC(y, m + 1, 1) - offset_ms },
  };
}

/** A limited key's spend as of `now_ms`: periods past count as nothing spent. */
export function spendAt(row: KeySpend | undefined, periods: Record<LimitReset, Period>) {
  return {
    total_micros: row?.total_micros ?? 0,
    daily: row && row.day === periods.daily.id ? row.day_micros : 0,
    weekly: row && row.week === periods.weekly.id ? row.week_micros : 0,
    monthly: row && row.month === periods.monthly.id ? row.month_micros : 0,
    held_micros: row?.held_micros ?? 0,
  };
}

/** What counts against the key's limit now: the current period's spend, or all of it without a reset. */
export function spentAgainstLimit(
  key: ApiKey,
  row: KeySpend | undefined,
  periods: Record<LimitReset, Period>,
): number {
  const spend = spendAt(row, periods);
  return key.limit_reset ? spend[key.limit_reset] : spend.total_micros;
}

/** Adds a settled cost to the key's spend row (the settlement's commit). */
export function addSpend(tx: Tx, key_id: string, cost_micros: number, offset_ms: number): void {
  const periods = periodsAt(tx.now.getTime(), offset_ms);
  const row = tx.get('key_spend', key_id);
  const spend = spendAt(row, periods);
  tx.set('key_spend', key_id, {
    total_micros: spend.total_micros + cost_micros,
    day: periods.daily.id,
    day_micros: spend.daily + cost_micros,
    week: periods.weekly.id,
    week_micros: spend.weekly + cost_micros,
    month: periods.monthly.id,
    month_micros: spend.monthly + cost_micros,
    held_micros: spend.held_micros,
  });
}

/** Changes what requests in flight hold against a key (PostgreSQL store: a row every gateway reads). */
export function addHeld(tx: Tx, key_id: string, delta_micros: number): void {
  const row = tx.get('key_spend', key_id);
  const held_micros = Math.max(0, (row?.held_micros ?? 0) + delta_micros);
  tx.set('key_spend', key_id, {
    total_micros: row?.total_micros ?? 0,
    day: row?.day ?? '',
    day_micros: row?.day_micros ?? 0,
    week: row?.week ?? '',
    week_micros: row?.week_micros ?? 0,
    month: row?.month ?? '',
    month_micros: row?.month_micros ?? 0,
    held_micros,
  });
}

export function keySpendOf(state: State, key_id: string): KeySpend | undefined {
  return rowOf(table(state, 'key_spend'), key_id);
}

/** Whether the key has expired at `now_ms`. */
export function isExpired(key: ApiKey, now_ms: number): boolean {
  return !!key.expires_at && Date.parse(key.expires_at) <= now_ms;
}
