// Loads into the PostgreSQL store's cache (pg/cache.ts): what a transaction or a read missed,
// in ONE statement whatever the kinds of key (rows, usage totals, balances, platform sums,
// index sets); the same load with the event loop waiting for a read outside any run
// (pg/blocking.ts); and a load's answer put into the cache.
import type pg from 'pg';
import { StoreUnavailableError } from '../../kernel/errors.js';
import type { BlockingQueries } from './blocking.js';
import type { PgCache } from './cache.js';
import {
  SEP,
  USAGE_TABLE,
  checkFieldName,
  holdsNul,
  rowKey,
  splitIndexKey,
  splitRowKey,
} from './keys.js';
import type { PgDb, StatementKind } from './pool.js';

/** The load query's rows: r row, a usage total, b balance, p platform balance, s set member, v index version. */
export type LoadRow = {
  kind: string;
  k1: string;
  k2: string | null;
  ver: string | null;
  val: string | null;
};

/** Rounds of loading what a read or run missed before giving up (a function that misses forever). */
export const MAX_LOAD_ROUNDS = 50;

export class CacheLoads {
  /** Keys being loaded now, and the load that brings them. */
  private readonly loading = new Map<string, Promise<void>>();

  constructor(
    private readonly db: PgDb,
    private readonly cache: PgCache,
    private readonly blocking: BlockingQueries,
  ) {}

  /** Whether a load is in flight. */
  get busy(): boolean {
    return this.loading.size > 0;
  }

  /** Loads keys into the cache (one statement); keys already being loaded are waited for. */
  load(keys: Iterable<string>, kind: StatementKind = 'load'): Promise<void> {
    const waits: Array<Promise<void>> = [];
    const fresh = new Set<string>();
    for (const key of keys) {
      const pending = this.loading.get(key);
      if (pending) waits.push(pending);
      else fresh.add(key);
    }
    if (fresh.size > 0) {
      const { text, params } = loadQuery(fresh);
      const sent = this.cache.load_seq;
      const loading = this.db
        .query<LoadRow>(text, params, kind)
        .then((rows) => this.loaded(fresh, rows, sent));
      const done = loading.finally(() => {
        for (const key of fresh) if (this.loading.get(key) === done) this.loading.delete(key);
      });
      for (const key of fresh) this.loading.set(key, done);
      waits.push(done);
    }
    return Promise.all(waits).then(() => undefined);
  }

  /** The same load, the event loop waiting (a read outside any run that missed). */
  loadBlocking(keys: Set<string>): void {
    if (this.db.closed) throw new StoreUnavailableError('the store is closed');
    const { text, params } = loadQuery(keys);
    const sent = this.cache.load_seq;
    if (holdsNul(params)) return this.loaded(keys, [], sent);
    this.db.sent('blocking_load');
    let rows: LoadRow[];
    try {
      rows = this.blocking.query<LoadRow>(text, params);
    } catch (error) {
      this.db.outage.failed(error, 1);
      throw error;
    }
    this.loaded(keys, rows, sent);
  }

  /** The same load through a connection holding the keys' locks (the locked path). */
  async loadLocked(client: pg.PoolClient, keys: Set<string>): Promise<void> {
    const { text, params } = loadQuery(keys);
    this.loaded(keys, (await client.query<LoadRow>(text, params)).rows);
  }

  /** A load's answer into the cache (`sent`: the load sequence number when it was sent; omitted under the keys' locks). */
  private loaded(keys: Set<string>, rows: LoadRow[], sent?: number): void {
    const stats = this.db.stats;
    stats.loads++;
    stats.rows_loaded += rows.length;
    const cache = this.cache;
    cache.load_seq++;
    const found = new Set<string>();
    const usage = new Map<string, Array<Record<string, number>>>();
    const sets = new Map<string, { ids: Set<string>; ver: number }>();
    for (const row of rows) {
      switch (row.kind) {
        case 'r':
          found.add(rowKey(row.k1, row.k2!));
          cache.putRow(row.k1, row.k2!, JSON.parse(row.val!), Number(row.ver), sent);
          break;
        case 'u': {
          const list = usage.get(row.k1) ?? [];
          list.push({ ...(JSON.parse(row.val!) as Record<string, number>) });
          usage.set(row.k1, list);
          break;
        }
        case 'b':
        case 'p':
          found.add(`${row.kind}${row.k1}`);
          cache.putBalance(row.kind, row.k1, Number(row.val), Number(row.ver ?? 0));
          break;
        case 's': {
          const key = `i${row.k1}`;
          const set = sets.get(key) ?? { ids: new Set<string>(), ver: 0 };
          set.ids.add(row.k2!);
          sets.set(key, set);
          const [table] = splitIndexKey(key);
          cache.putRow(table, row.k2!, JSON.parse(row.val!), Number(row.ver), sent);
          break;
        }
        case 'v': {
          const key = `i${row.k1}`;
          const set = sets.get(key) ?? { ids: new Set<string>(), ver: 0 };
          set.ver = Number(row.ver);
          sets.set(key, set);
          break;
        }
      }
    }
    for (const [account_id, parts] of usage) {
      found.add(rowKey(USAGE_TABLE, account_id));
      cache.putRow(USAGE_TABLE, account_id, usageTotals(parts), -1);
    }
    for (const key of keys) {
      if (key[0] === 'i') {
        const [table, field, value] = splitIndexKey(key);
        const set = sets.get(key) ?? { ids: new Set<string>(), ver: 0 };
        cache.putSet(table, field, value, set.ids, set.ver);
        continue;
      }
      if (found.has(key)) continue;
      if (key[0] === 'r') {
        const [table, id] = splitRowKey(key);
        cache.putRow(table, id, undefined, table === USAGE_TABLE ? -1 : 0, sent);
      } else if (key[0] === 'b' || key[0] === 'p') cache.putBalance(key[0], key.slice(1), 0, 0);
    }
    cache.evict();
  }
}

/** The usage totals of an account (as the JSON-file store keeps them) from its rows per protocol. */
function usageTotals(parts: Array<Record<string, number>>): unknown {
  const totals: Record<string, unknown> = {
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost_micros: 0,
  };
  let cached = 0;
  let reasoning = 0;
  const by_protocol: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const part of parts) {
    totals.requests = (totals.requests as number) + part.requests!;
    totals.prompt_tokens = (totals.prompt_tokens as number) + part.prompt_tokens!;
    totals.completion_tokens = (totals.completion_tokens as number) + part.completion_tokens!;
    totals.cost_micros = (totals.cost_micros as number) + part.cost_micros!;
    cached += part.cached_tokens!;
    reasoning += part.reasoning_tokens!;
    by_protocol[part.protocol as unknown as string] = {
      requests: part.requests,
      prompt_tokens: part.prompt_tokens,
      completion_tokens: part.completion_tokens,
      cached_tokens: part.cached_tokens,
      reasoning_tokens: part.reasoning_tokens,
      cost_micros: part.cost_micros,
    };
  }
  if (cached) totals.cached_tokens = cached;
  if (reasoning) totals.reasoning_tokens = reasoning;
  totals.by_protocol = by_protocol;
  return totals;
}

/** One statement loading keys of every kind: rows, usage totals, balances, platform sums, index sets. */
function loadQuery(keys: Set<string>): { text: string; params: unknown[] } {
  const row_t: string[] = [];
  const row_i: string[] = [];
  const usage: string[] = [];
  const balances: string[] = [];
  const pools: string[] = [];
  const sets = new Map<string, string[]>(); // table␟field → values
  for (const key of keys) {
    if (key[0] === 'r') {
      const [t, i] = splitRowKey(key);
      if (t === USAGE_TABLE) usage.push(i);
      else {
        row_t.push(t);
        row_i.push(i);
      }
    } else if (key[0] === 'b') balances.push(key.slice(1));
    else if (key[0] === 'p') pools.push(key.slice(1));
    else if (key[0] === 'i') {
      const [t, f, value] = splitIndexKey(key);
      const pair = `${t}${SEP}${f}`;
      sets.set(pair, [...(sets.get(pair) ?? []), value]);
    }
  }
  const parts: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (row_t.length > 0)
    parts.push(
      `SELECT 'r'::text AS kind, r.tbl AS k1, r.id AS k2, r.ver::text AS ver, r.row::text AS val
       FROM aihub.rows r JOIN unnest(${param(row_t)}::text[], ${param(row_i)}::text[]) AS w(t, i) ON r.tbl = w.t AND r.id = w.i`,
    );
  if (usage.length > 0)
    parts.push(
      `SELECT 'u' AS kind, u.account_id AS k1, u.protocol AS k2, NULL AS ver, json_build_object('protocol', u.protocol, 'requests', u.requests,
         'prompt_tokens', u.prompt_tokens, 'completion_tokens', u.completion_tokens, 'cached_tokens', u.cached_tokens,
         'reasoning_tokens', u.reasoning_tokens, 'cost_micros', u.cost_micros)::text AS val
       FROM aihub.usage u WHERE u.account_id = ANY(${param(usage)}::text[])`,
    );
  if (balances.length > 0)
    parts.push(
      `SELECT 'b' AS kind, x.account AS k1, NULL AS k2, x.ver::text AS ver, x.micros::text AS val FROM aihub.balances x WHERE x.account = ANY(${param(balances)}::text[])`,
    );
  if (pools.length > 0)
    parts.push(
      `SELECT 'p' AS kind, p.account AS k1, NULL AS k2, '0' AS ver, sum(p.micros)::text AS val FROM aihub.pool p WHERE p.account = ANY(${param(pools)}::text[]) GROUP BY p.account`,
    );
  for (const [pair, values] of sets) {
    const [t, f] = pair.split(SEP) as [string, string];
    checkFieldName(f);
    const tp = param(t);
    const vp = param(values);
    parts.push(
      `(SELECT 's' AS kind, r.tbl || chr(31) || '${f}' || chr(31) || (r.row->>'${f}') AS k1, r.id AS k2,
         r.ver::text AS ver, r.row::text AS val
       FROM aihub.rows r WHERE r.tbl = ${tp} AND r.row->>'${f}' = ANY(${vp}::text[]) ORDER BY r.created)`,
    );
    parts.push(
      `SELECT 'v' AS kind, x.ikey AS k1, NULL AS k2, x.ver::text AS ver, NULL AS val FROM aihub.index_versions x
       WHERE x.ikey = ANY(SELECT ${tp} || chr(31) || '${f}' || chr(31) || v FROM unnest(${vp}::text[]) v)`,
    );
  }
  if (parts.length === 0)
    parts.push(`SELECT NULL::text AS kind, NULL, NULL, NULL, NULL WHERE false`);
  return { text: parts.join('\nUNION ALL\n'), params };
}
