// The one door to the storage backends (docs/ARCHITECTURE.md, "Storage"): main.ts opens,
// verifies and migrates the store the config names through these functions and knows
// neither backend; the rooms are handed the `Store` (store/types.ts). A data dir is the
// JSON-file store (store/store.ts); a database URL is PostgreSQL (store/pg/).
import { openPgStore } from './pg/store.js';
import { migrateDataDir, migrateOldLayout, verifyPg, type MigrateReport } from './pg/tools.js';
import type { HistoryTags } from './history-tags.js';
import type { ReplayCheck } from './replay-check.js';
import { FileStore, type DiskStats, type StoreOptions } from './store.js';
import type { Store } from './types.js';
import { verifyDataDir } from './verify.js';

export { IS_BLOCKING_WORKER } from './pg/blocking-worker.js';
export { redactUrl } from './pg/keys.js';

/** Where the store is, as the config says: a database URL wins over the data dir. */
export interface StoreConfig {
  data_dir: string;
  database_url?: string | undefined;
  /** The JSON-file store's tuning (config `store`). */
  store: Required<
    Pick<
      StoreOptions,
      | 'checkpoint_every_records'
      | 'checkpoint_interval_ms'
      | 'segment_bytes'
      | 'disk_reserve_bytes'
      | 'disk_warn_free_bytes'
      | 'disk_check_interval_ms'
    >
  >;
}

export interface OpenStoreOptions {
  /** This gateway's name among the live ones (PostgreSQL). */
  gateway_id: string;
  /** AIHUB_GATEWAY_LIVE_MS, AIHUB_CACHE_ROWS, AIHUB_STORE_OUTCOME_WAIT_MS (PostgreSQL). */
  env: NodeJS.ProcessEnv;
  /** What the history indexes tag records with (the rooms' description: payments/history-tags.ts). */
  history_tags: HistoryTags;
  warn: (message: string, fields?: Record<string, unknown>) => void;
}

/** Opens the store the config names (the data dir's lock is taken either way). */
export async function openStore(config: StoreConfig, options: OpenStoreOptions): Promise<Store> {
  if (config.database_url)
    return openPgStore(config.database_url, {
      lock_dir: config.data_dir,
      gateway_id: options.gateway_id,
      ...liveWindow(options.env),
      ...cacheRows(options.env),
      ...outcomeWait(options.env),
      history_tags: options.history_tags,
      warn: options.warn,
    });
  return FileStore.open(config.data_dir, {
    checkpoint_every_records: config.store.checkpoint_every_records,
    checkpoint_interval_ms: config.store.checkpoint_interval_ms,
    segment_bytes: config.store.segment_bytes,
    disk_reserve_bytes: config.store.disk_reserve_bytes,
    disk_warn_free_bytes: config.store.disk_warn_free_bytes,
    disk_check_interval_ms: config.store.disk_check_interval_ms,
    history_tags: options.history_tags,
    warn: options.warn,
  });
}

/** The data dir's disk for /metrics, when the store is on one (the JSON-file store). */
export function storeDisk(store: Store): (() => DiskStats) | null {
  return store instanceof FileStore ? () => store.diskStats() : null;
}

/** The books of the store the config names: the data dir's (`full`: from the first record) or the database's. */
export function verifyStore(
  config: Pick<StoreConfig, 'data_dir' | 'database_url'>,
  options: { full: boolean; checks: readonly ReplayCheck[] },
): Promise<{ ok: boolean; breaches: string[] }> {
  if (config.database_url) return verifyPg(config.database_url, options.checks);
  return verifyDataDir(config.data_dir, options);
}

/**
 * Moves a JSON-file store (`from_data_dir`) into the database, or, without one, the store of
 * the database's earlier layout into this version's tables; then checks both sides equal.
 */
export function migrateStore(
  from_data_dir: string | undefined,
  database_url: string,
  history_tags: HistoryTags,
): Promise<MigrateReport> {
  return from_data_dir
    ? migrateDataDir(from_data_dir, database_url, history_tags)
    : migrateOldLayout(database_url, history_tags);
}

/** AIHUB_GATEWAY_LIVE_MS: how recent another gateway's heartbeat must be to count it live (1 s to 1 h; else the default). */
function liveWindow(env: NodeJS.ProcessEnv): { live_ms?: number } {
  const value = Number(env.AIHUB_GATEWAY_LIVE_MS);
  return Number.isSafeInteger(value) && value >= 1_000 && value <= 3_600_000
    ? { live_ms: value }
    : {};
}

/** AIHUB_CACHE_ROWS: how many rows a PostgreSQL gateway keeps in memory (default 100,000). */
function cacheRows(env: NodeJS.ProcessEnv): { cache_rows?: number } {
  const value = Number(env.AIHUB_CACHE_ROWS);
  return Number.isSafeInteger(value) && value >= 100 ? { cache_rows: value } : {};
}

/** AIHUB_STORE_OUTCOME_WAIT_MS: how long a commit whose answer was lost is looked up (100 ms to 60 s; else 10 s). */
function outcomeWait(env: NodeJS.ProcessEnv): { outcome_wait_ms?: number } {
  const value = Number(env.AIHUB_STORE_OUTCOME_WAIT_MS);
  return Number.isSafeInteger(value) && value >= 100 && value <= 60_000
    ? { outcome_wait_ms: value }
    : {};
}
