// A batch of transaction runs as the argument of `aihub.commit` (schema.ts): the keys to lock,
// the read set and guards to check, and the writes (rows as the batch leaves them, counter,
// balance and shard deltas, postings, wallet lines, history with what readers filter on, usage
// and key figures, index keys, meta, what to announce).
import { logAux, type HistoryTags } from '../history-tags.js';
import type { HistoryRecord, Posting } from '../state.js';
import type { PgCache, Run, RunOp } from './cache.js';
import {
  isAnnounced,
  isCustomerBalance,
  lockOf,
  SEP,
  splitIndexKey,
  splitRowKey,
  storedIndexKey,
  USAGE_TABLE,
} from './keys.js';

export interface CommitBatch {
  locks: string[];
  rr: Array<{ t: string; i: string; v: number }>;
  br: Array<{ a: string; v: number }>;
  pr: Array<{ a: string; m: number }>;
  ir: Array<{ k: string; v: number }>;
  g: Array<{ m: number; c: Array<{ b?: string; t?: string; i?: string; c: number }> }>;
  set: Array<{ t: string; i: string; r: unknown }>;
  del: Array<{ t: string; i: string }>;
  add: Array<{ t: string; i: string; n: number }>;
  bal: Array<{ a: string; d: number }>;
  pool: Array<{ a: string; d: number }>;
  shard: string;
  post: Array<{ id: string; at: string; a: string | null; p: Posting }>;
  wal: Array<{ a: string; at: string; pid: string; d: number; p: Posting; rb: Posting | null }>;
  hist: Array<{
    kind: string;
    at: string;
    a: string | null;
    key: string | null;
    tag: number | null;
    aux: number | null;
    aux2: number | null;
    label: string | null;
    r: HistoryRecord;
  }>;
  use: Array<{
    a: string;
    pr: string;
    n: number;
    pt: number;
    ct: number;
    cc: number;
    rt: number;
    cost: number;
  }>;
  ks: Array<{ k: string; n: number; cost: number; last: string }>;
  ix: Array<{ t: string; f: string }>;
  meta: Array<{ k: string; v: unknown }>;
  notify: string | null;
  /** The commit id (aihub.commits), on a batch that writes: looked up when its answer is lost. */
  cid?: string;
}

/** Whether a batch changes anything (one that only reads has no outcome to look up). */
export function batchWrites(batch: CommitBatch): boolean {
  return (
    batch.set.length > 0 ||
    batch.del.length > 0 ||
    batch.add.length > 0 ||
    batch.bal.length > 0 ||
    batch.pool.length > 0 ||
    batch.post.length > 0 ||
    batch.wal.length > 0 ||
    batch.hist.length > 0 ||
    batch.use.length > 0 ||
    batch.ks.length > 0 ||
    batch.meta.length > 0
  );
}

/**
 * The batch as the statement's parameter: the parts it leaves empty (most of them: a chat
 * reservation fills 5 of 20) are left out, and `aihub.commit` (commit-function.ts) skips the
 * statements on a part that is absent, instead of running each on an empty array.
 */
export function batchText(batch: CommitBatch): string {
  const present: Record<string, unknown> = {};
  for (const [part, value] of Object.entries(batch))
    if (value !== null && !(Array.isArray(value) && value.length === 0)) present[part] = value;
  return JSON.stringify(present);
}

/** The commit statement, prepared once per connection (named: PostgreSQL parses and plans it once). */
export const COMMIT_STATEMENT = {
  name: 'aihub_commit',
  text: 'SELECT kind, k1, k2, ver::text AS ver, val FROM aihub.commit($1)',
} as const;

/**
 * The same statement committed without waiting for its WAL flush (a batch of only
 * non-durable transactions: TransactOptions.durable). `synchronous_commit` is read when the
 * statement's implicit transaction commits, so setting it (locally) anywhere in the statement
 * is enough; every later synchronous commit flushes the WAL through this one too.
 */
export const COMMIT_STATEMENT_ASYNC = {
  name: 'aihub_commit_async',
  text: "SELECT kind, k1, k2, ver::text AS ver, val FROM set_config('synchronous_commit', 'off', true) AS sync, aihub.commit($1)",
} as const;

/** NOTIFY payloads are at most 8,000 bytes: past this, every gateway drops every announced row instead. */
const NOTIFY_MAX_CHARS = 7_000;

const num = (value: unknown): number =>
  typeof value === 'number' && Number.isSafeInteger(value) ? value : 0;

/** What a history record adds to the columns readers filter and add up on (as the JSON-file indexes do). */
function historyColumns(
  record: HistoryRecord,
  tags: HistoryTags,
): Pick<CommitBatch['hist'][number], 'tag' | 'aux' | 'aux2' | 'label'> {
  if (record.type === 'usage')
    return {
      tag: null,
      aux: num(record.cost_micros),
      aux2: num(record.prompt_tokens) + num(record.completion_tokens),
      label: typeof record.tier === 'string' ? record.tier : 'other',
    };
  if (record.type === 'api_log') {
    return {
      tag: typeof record.status === 'number' ? record.status : 0,
      aux: logAux(tags, record),
      aux2: typeof record.latency_ms === 'number' ? record.latency_ms : 0,
      label: null,
    };
  }
  if (record.type === 'audit')
    return { tag: null, aux: null, aux2: null, label: String(record.action ?? '') };
  return { tag: null, aux: null, aux2: null, label: null };
}

/** The wire protocol of a usage record as the JSON-file store's totals name it. */
function protocolOf(record: HistoryRecord): string {
  return typeof record.protocol === 'string' && /^[a-z_]{1,20}$/.test(record.protocol)
    ? record.protocol
    : 'chat';
}

/**
 * Encodes the kept runs of a batch (in order). `announced_by` prefixes the announcement (a
 * gateway skips its own). Returns the batch and the keys the commit settles in the cache.
 */
export function encodeBatch(
  cache: PgCache,
  runs: readonly Run[],
  shard: string,
  announced_by: string,
  tags: HistoryTags,
): { batch: CommitBatch; written: Set<string> } {
  const locks = new Set<string>();
  const reads = new Map<string, number>();
  const pool_reads = new Map<string, number>();
  const guards: CommitBatch['g'] = [];
  const absolute = new Set<string>();
  const adds = new Map<string, number>();
  const balance = new Map<string, number>();
  const pool = new Map<string, number>();
  const post: CommitBatch['post'] = [];
  const wal: CommitBatch['wal'] = [];
  const hist: CommitBatch['hist'] = [];
  const use = new Map<string, CommitBatch['use'][number]>();
  const ks = new Map<string, CommitBatch['ks'][number]>();
  const meta: CommitBatch['meta'] = [];
  const written = new Set<string>();
  const announce = new Set<string>();
  for (const run of runs) {
    for (const key of run.keys) if (!key.startsWith(`r${USAGE_TABLE}${SEP}`)) locks.add(key);
    for (const [key, ver] of run.reads)
      // A key holding U+0000 names a row PostgreSQL text cannot hold: absent now and always,
      // so there is nothing to check (and it could not be sent as text).
      if (!reads.has(key) && !key.includes('\u0000')) reads.set(key, ver);
    for (const [key, micros] of run.pool_reads)
      if (!pool_reads.has(key)) pool_reads.set(key, micros);
    for (const guard of run.guards)
      guards.push({
        m: guard.min,
        c: guard.cells.map(([key, c]) => {
          if (key[0] === 'b') return { b: key.slice(1), c };
          const [t, i] = splitRowKey(key);
          return { t, i, c };
        }),
      });
    for (const key of run.written) written.add(key);
    for (const key of run.announce)
      if (isAnnounced(splitIndexKey(key)[0])) announce.add(storedIndexKey(key));
    collectOps(run.ops, { tags, absolute, adds, balance, pool, post, wal, hist, use, ks, meta });
  }
  const set: CommitBatch['set'] = [];
  const del: CommitBatch['del'] = [];
  const tables = new Set<string>();
  for (const key of absolute) {
    const [t, i] = splitRowKey(key);
    tables.add(t);
    const entry = cache.entries.get(key);
    if (entry?.kind === 'r' && entry.present) set.push({ t, i, r: entry.value });
    else del.push({ t, i });
    if (isAnnounced(t)) announce.add(key.slice(1));
  }
  const add: CommitBatch['add'] = [];
  for (const [key, n] of adds) {
    if (absolute.has(key) || n === 0) continue;
    const [t, i] = splitRowKey(key);
    add.push({ t, i, n });
    if (isAnnounced(t)) announce.add(key.slice(1));
  }
  const ix: CommitBatch['ix'] = [];
  for (const t of tables)
    for (const { field, in_transactions } of cache.declared.get(t) ?? [])
      if (in_transactions) ix.push({ t, f: field });
  const rr: CommitBatch['rr'] = [];
  const br: CommitBatch['br'] = [];
  const ir: CommitBatch['ir'] = [];
  for (const [key, v] of reads) {
    if (key[0] === 'r') {
      const [t, i] = splitRowKey(key);
      rr.push({ t, i, v });
    } else if (key[0] === 'b') br.push({ a: key.slice(1), v });
    else if (key[0] === 'i') ir.push({ k: storedIndexKey(key), v });
  }
  let notify: string | null = null;
  if (announce.size > 0) {
    notify = `${announced_by}\n${[...announce].join('\n')}`;
    if (notify.length > NOTIFY_MAX_CHARS) notify = `${announced_by}\n*`;
  }
  return {
    batch: {
      locks: [...locks]
        .map(lockOf)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
        .map(String),
      rr,
      br,
      pr: [...pool_reads].map(([key, m]) => ({ a: key.slice(1), m })),
      ir,
      g: guards,
      set,
      del,
      add,
      bal: [...balance]
        .filter(([, d]) => d !== 0)
        .map(([a, d]) => ({ a, d }))
        .sort((x, y) => (x.a < y.a ? -1 : 1)),
      // In one order (as the balances): two statements on one shard never wait in a cycle.
      pool: [...pool]
        .filter(([, d]) => d !== 0)
        .map(([a, d]) => ({ a, d }))
        .sort((x, y) => (x.a < y.a ? -1 : 1)),
      shard,
      post,
      wal,
      hist,
      use: [...use.values()].sort((x, y) =>
        x.a < y.a ? -1 : x.a > y.a ? 1 : x.pr < y.pr ? -1 : 1,
      ),
      ks: [...ks.values()].sort((x, y) => (x.k < y.k ? -1 : 1)),
      ix,
      meta,
      notify,
    },
    written,
  };
}

interface Collected {
  /** What the rooms tag history with (an API log's service code in its columns). */
  tags: HistoryTags;
  absolute: Set<string>;
  adds: Map<string, number>;
  balance: Map<string, number>;
  pool: Map<string, number>;
  post: CommitBatch['post'];
  wal: CommitBatch['wal'];
  hist: CommitBatch['hist'];
  use: Map<string, CommitBatch['use'][number]>;
  ks: Map<string, CommitBatch['ks'][number]>;
  meta: CommitBatch['meta'];
}

/** One run's ops into the batch's parts (in order: postings, wallet lines and history keep it). */
export function collectOps(ops: readonly RunOp[], out: Collected): void {
  for (const op of ops) {
    switch (op.o) {
      case 'set':
      case 'del':
        out.absolute.add(`r${op.t}${SEP}${op.id}`);
        break;
      case 'add': {
        const key = `r${op.t}${SEP}${op.id}`;
        out.adds.set(key, (out.adds.get(key) ?? 0) + op.n);
        break;
      }
      case 'post':
        collectPosting(op.p, ops, out);
        break;
      case 'hist':
        collectHistory(op.r, out);
        break;
      case 'meta':
        out.meta.push({ k: op.k, v: op.v });
        break;
    }
  }
}

function collectPosting(posting: Posting, ops: readonly RunOp[], out: Collected): void {
  out.post.push({ id: posting.id, at: posting.ts, a: posting.account_id, p: posting });
  for (const [account, amount] of posting.entries) {
    const into = isCustomerBalance(account) ? out.balance : out.pool;
    into.set(account, (into.get(account) ?? 0) + amount);
  }
  const account_id = posting.account_id;
  if (!account_id) return;
  let delta = 0;
  let touches = false;
  for (const [account, amount] of posting.entries)
    if (account === `wallet:${account_id}`) {
      delta += amount;
      touches = true;
    }
  if (!touches) return;
  // A hold opened and resolved by the same transaction: its line names what resolved it.
  const hold_id = posting.hold?.action === 'open' ? posting.hold.id : null;
  const resolved = hold_id
    ? ops.find((o) => o.o === 'post' && o.p.hold?.id === hold_id && o.p.hold.action !== 'open')
    : undefined;
  out.wal.push({
    a: account_id,
    at: posting.ts,
    pid: posting.id,
    d: delta,
    p: posting,
    rb: resolved?.o === 'post' ? resolved.p : null,
  });
}

function collectHistory(record: HistoryRecord, out: Collected): void {
  const account_id = typeof record.account_id === 'string' ? record.account_id : null;
  const key_id = typeof record.key_id === 'string' ? record.key_id : null;
  out.hist.push({
    kind: record.type,
    at: record.ts,
    a: account_id,
    key: key_id,
    ...historyColumns(record, out.tags),
    r: record,
  });
  const cost = num(record.cost_micros);
  if (key_id) {
    const stats = out.ks.get(key_id) ?? { k: key_id, n: 0, cost: 0, last: record.ts };
    stats.n++;
    stats.cost += cost;
    if (record.ts > stats.last) stats.last = record.ts;
    out.ks.set(key_id, stats);
  }
  if (record.type === 'usage' && account_id) {
    const protocol = protocolOf(record);
    const id = `${account_id}${SEP}${protocol}`;
    const use = out.use.get(id) ?? {
      a: account_id,
      pr: protocol,
      n: 0,
      pt: 0,
      ct: 0,
      cc: 0,
      rt: 0,
      cost: 0,
    };
    use.n++;
    use.pt += num(record.prompt_tokens);
    use.ct += num(record.completion_tokens);
    use.cc += num(record.cached_tokens);
    use.rt += num(record.reasoning_tokens);
    use.cost += cost;
    out.use.set(id, use);
  }
}
