// What the PostgreSQL store's cache, read sets, write sets and locks are keyed by, and how a
// table and a ledger account are treated (docs/store-postgres.md).
//
// A key is one string whose first character says its kind:
//   r<table>␟<id>            a row of a table (counters too: rows whose value is a number)
//   b<ledger account>        a customer's balance (a row of aihub.balances)
//   p<ledger account>        a platform account's balance (the sum of its shards in aihub.pool)
//   i<table>␟<field>␟<key>   the set of a table's rows whose field is key (an index key)
//   u<account id>            an account's usage totals (aihub.usage: locked by the commits adding to them)
//   k<key id>                an API key's figures (aihub.key_stats: likewise)
import { createHash } from 'node:crypto';
import { isCustomerLedgerAccount } from '../state.js';

/** Separates the parts of a key (U+001F, which no id, field or table name of ours holds). */
export const SEP = '\u001f';

export const rowKey = (table: string, id: string): string => `r${table}${SEP}${id}`;
export const balanceKey = (account: string): string => `b${account}`;
export const poolKey = (account: string): string => `p${account}`;
export const indexKey = (table: string, field: string, key: string): string =>
  `i${table}${SEP}${field}${SEP}${key}`;
export const usageKey = (account_id: string): string => `u${account_id}`;
export const keyStatsKey = (key_id: string): string => `k${key_id}`;

/** A row key's table and id. */
export function splitRowKey(key: string): [table: string, id: string] {
  const at = key.indexOf(SEP);
  return [key.slice(1, at), key.slice(at + 1)];
}

/** An index key's table, field and key. */
export function splitIndexKey(key: string): [table: string, field: string, value: string] {
  const first = key.indexOf(SEP);
  const second = key.indexOf(SEP, first + 1);
  return [key.slice(1, first), key.slice(first + 1, second), key.slice(second + 1)];
}

/** The index key without its kind character, as aihub.index_versions keeps it. */
export const storedIndexKey = (key: string): string => key.slice(1);

/**
 * The 64-bit number a key is locked by (`pg_advisory_xact_lock`), as decimal text. Two keys
 * that collide only serialize two commits that did not need it (one in 2^64 pairs).
 */
export function lockOf(key: string): bigint {
  return createHash('md5').update(key).digest().readBigInt64BE(0);
}

/**
 * A customer's ledger account: a row of its own (locked by the commits that change it, read
 * exactly or by guards). Wallets and holds may never go below zero (a CHECK in the database
 * too); what an account owes is `receivable:`. Every other account (revenue, funding,
 * providers, commissions, taxes...) belongs to the platform: written by many accounts' commits
 * at once, it is kept in shards (one per connection of each gateway) and never locked.
 */
export function isCustomerBalance(ledger_account: string): boolean {
  return isCustomerLedgerAccount(ledger_account) || ledger_account.startsWith('receivable:');
}

/**
 * Tables whose rows change often and are read outside transactions only when they must be
 * current (a fresh read loads them): a commit that writes them announces nothing. Every other
 * table is announced (NOTIFY) when written, and gateways drop the rows from their caches: the
 * rows requests read before any transaction (keys, accounts, sessions...) stay current so.
 */
export const VALIDATED_TABLES: ReadonlySet<string> = new Set([
  'payment_txns',
  'idempotency',
  'holds',
  'chat_reservations',
  'chat_reserved',
  'chat_free_usage',
  'key_spend',
  'usage',
  'dmt_usage',
  'webhook_deliveries',
  'bill_fetches',
  'payment_recent',
]);

/**
 * Tables whose rows a transaction looks up by a key that is new nearly every time: a payment's
 * duplicate-window row (account, service, subject, amount) and an idempotency key. A
 * transaction's read of such a row that the cache does not hold is taken as "absent" and
 * recorded at version 0, which the commit statement checks under the key's lock like any read:
 * if the row exists after all, the commit writes nothing, answers the row, and the transaction
 * runs again on it. So the common case costs no load statement before the commit, and the
 * rare one costs what a load would have (one more round trip).
 */
export const PRESUMED_ABSENT_TABLES: ReadonlySet<string> = new Set([
  'payment_recent',
  'idempotency',
]);

export function isAnnounced(table: string): boolean {
  return !VALIDATED_TABLES.has(table);
}

/** The usage totals are not rows: aihub.usage keeps them, added to by the commits of usage records. */
export const USAGE_TABLE = 'usage';

/** Names that go into SQL text (an index's field): plain identifiers only. */
export function checkFieldName(field: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(field)) throw new Error(`bad field name ${field}`);
  return field;
}

/** A database URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the database URL';
  }
}

/** Whether a query parameter (or an element of an array parameter) holds U+0000. */
export function holdsNul(params: readonly unknown[]): boolean {
  return params.some((param) =>
    typeof param === 'string'
      ? param.includes('\u0000')
      : Array.isArray(param) &&
        param.some((item) => typeof item === 'string' && item.includes('\u0000')),
  );
}
