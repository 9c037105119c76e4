// A PostgreSQL gateway's replica kept across restarts (issue #18): its start-up costs the
// live state plus the log records committed since it stopped, not the whole history.
//
// The replica (a Store on `<data dir>/pg-replica`) carries a stamp, `replica.json`: the
// database it follows (`aihub_head.db_id`) and whether it was closed cleanly. Its journal is
// not fsynced per commit (PostgreSQL holds every record), so what a crash can leave depends
// on the crash:
//   - closed cleanly: the journal was fsynced at close, then the final checkpoint and the
//     indexes, then the stamp (`clean`, with the last record's sequence number and digest):
//     the replica is whole on disk whatever happens to the machine afterwards;
//   - the process died (SIGKILL, OOM) on a machine that kept running: everything written is
//     in the page cache, so the files are as the process left them, at most with a torn last
//     journal line, which the JSON-file store's recovery drops; the replica is short, never
//     ahead: a record reaches its journal only after PostgreSQL committed it;
//   - the machine restarted (power loss, kernel crash) since an unclean stop (the stamp
//     names the boot it was written in): writes that were not fsynced may be lost in any
//     order, so the replica is not trusted and is rebuilt.
// Whatever the stamp says, the open replica must then agree with the database: its last
// record is at most the log's head and is the log's record at that sequence number (time and
// ops compared), else it is rebuilt. Every rebuild says why in one warn line.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { DurableJsonFile } from './durable-file.js';
import { readJournal } from './journal.js';
import { isAlive } from './lock.js';
import { mkdirPrivate } from './private-files.js';
import { JOURNAL_DIR, Store, type ReplicaOpened, type StoreOptions } from './store.js';
import type { JournalRecord } from './state.js';

export const REPLICA_STAMP = 'replica.json';

/** What the stamp file holds. */
export interface ReplicaStamp {
  format: 1;
  /** The database this replica follows (`aihub_head.db_id`). */
  db_id: string;
  /** true once a close wrote everything; false from the moment a gateway opens it. */
  clean: boolean;
  /** Closed cleanly: the last record applied, and the digest of that record. */
  seq?: number;
  digest?: string;
  /** Who opened it last: the host, its boot, the process. */
  host: string;
  boot_id: string | null;
  pid: number;
}

/** The machine's boot (Linux: changes at every boot), or null where it cannot be read. */
export function currentBootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/** The digest that identifies a log record: its time and its ops, as JSON. */
export function recordDigest(record: Pick<JournalRecord, 't' | 'ops'>): string {
  return createHash('sha256')
    .update(record.t)
    .update('\n')
    .update(JSON.stringify(record.ops))
    .digest('hex');
}

export interface Here {
  host: string;
  boot_id: string | null;
  pid: number;
}

export function here(boot_id: string | null = currentBootId()): Here {
  return { host: hostname(), boot_id, pid: process.pid };
}

/** The stamp, `null` when there is none, or the reason it cannot be read. */
async function readStamp(dir: string): Promise<ReplicaStamp | null | { unreadable: string }> {
  try {
    const stamp = await new DurableJsonFile<ReplicaStamp>(join(dir, REPLICA_STAMP)).read();
    if (stamp === null) return null;
    if (
      typeof stamp !== 'object' ||
      stamp.format !== 1 ||
      typeof stamp.db_id !== 'string' ||
      typeof stamp.clean !== 'boolean'
    )
      return { unreadable: 'its stamp is not one this version writes' };
    return stamp;
  } catch (error) {
    return { unreadable: `its stamp is unreadable (${(error as Error).message})` };
  }
}

export function writeStamp(dir: string, stamp: ReplicaStamp): Promise<void> {
  return new DurableJsonFile<ReplicaStamp>(join(dir, REPLICA_STAMP)).write(stamp);
}

/**
 * Whether the replica dir may be opened as it is, judged by its stamp alone (before the
 * store is opened): `keep` with the stamp, or why it must be rebuilt (null: there is nothing
 * to keep, the dir is new or empty).
 */
export async function judgeStamp(
  dir: string,
  db_id: string,
  now: Here,
): Promise<{ keep: ReplicaStamp } | { rebuild: string | null }> {
  if (!existsSync(dir) || readdirSync(dir).length === 0) return { rebuild: null };
  const stamp = await readStamp(dir);
  if (stamp === null)
    return { rebuild: 'it has no stamp (written by an older version, or its stamp was lost)' };
  if ('unreadable' in stamp) return { rebuild: stamp.unreadable };
  if (stamp.db_id !== db_id)
    return { rebuild: `it follows another database (${stamp.db_id}, this one is ${db_id})` };
  if (!stamp.clean) {
    if (stamp.host !== now.host)
      return { rebuild: `it was not closed cleanly, on another host (${stamp.host})` };
    if (stamp.boot_id === null || stamp.boot_id !== now.boot_id)
      return {
        rebuild:
          'it was not closed cleanly and the machine restarted since (its journal is not fsynced: a power loss may have cut it anywhere)',
      };
    // This very process (a store opened twice) counts as running too.
    if (stamp.pid === now.pid || isAlive(stamp.pid))
      return {
        rebuild: `it was not closed cleanly and the gateway that had it open (pid ${stamp.pid}) is still running: a copy of a running replica`,
      };
  }
  return { keep: stamp };
}

/** The replica's own record number `seq` (null when its journal does not have it). */
function replicaRecord(dir: string, seq: number): JournalRecord | null {
  for (const record of readJournal(join(dir, JOURNAL_DIR), seq - 1, {
    repair: false,
    up_to_seq: seq,
  }))
    if (record.s === seq) return record;
  return null;
}

/**
 * The stamp of a replica closed cleanly at record `seq` (its journal, checkpoint and indexes
 * written and synced), or null when its journal lacks that record (then it stays unclean).
 */
export function closedStamp(
  dir: string,
  db_id: string,
  seq: number,
  now: Here,
): ReplicaStamp | null {
  const last = seq > 0 ? replicaRecord(dir, seq) : null;
  if (seq > 0 && !last) return null;
  return {
    format: 1,
    db_id,
    clean: true,
    seq,
    ...(last ? { digest: recordDigest(last) } : {}),
    ...now,
  };
}

interface LogRow {
  at: Date;
  ops: string;
}

/**
 * Whether the opened replica agrees with the database: null when it does, else why not.
 * Its last record must be at most the log's head and be the log's record at that number.
 */
export async function disagreement(
  store: Store,
  pool: pg.Pool,
  head_seq: number,
  stamp: ReplicaStamp,
): Promise<string | null> {
  const seq = store.state.seq;
  if (stamp.clean && stamp.seq !== undefined && stamp.seq !== seq)
    return `it was closed cleanly at record ${stamp.seq} but opens at record ${seq}`;
  if (seq > head_seq)
    return `it has applied record ${seq} but the database's log ends at ${head_seq} (was the database restored to an older point?)`;
  if (seq === 0) return null;
  const mine = replicaRecord(store.data_dir, seq);
  if (!mine) return `its journal does not hold its last record ${seq}`;
  const digest = recordDigest(mine);
  if (stamp.clean && stamp.digest !== undefined && stamp.digest !== digest)
    return `its record ${seq} is not the one it was closed with`;
  const { rows } = await pool.query<LogRow>('SELECT at, ops FROM aihub_log WHERE seq = $1', [seq]);
  const row = rows[0];
  if (!row) return `the database's log has no record ${seq}`;
  const theirs = { t: row.at.toISOString(), ops: JSON.parse(row.ops) as JournalRecord['ops'] };
  if (recordDigest(theirs) !== digest)
    return `its record ${seq} differs from the database's (was the database restored and written to since?)`;
  return null;
}

/** Empties the replica dir (every file of it: the stamp goes first, so a crash mid-way leaves no stamp). */
export function wipeReplica(dir: string): void {
  rmSync(join(dir, REPLICA_STAMP), { force: true });
  rmSync(dir, { recursive: true, force: true });
  mkdirPrivate(dir);
}

/**
 * Applies every log record after the replica's sequence number, a page at a time: the
 * replica's journal writes each page before the next is read, so memory stays bounded
 * however long the log. Returns how many records were applied.
 */
export async function catchUpAtOpen(
  store: Store,
  read: (after_seq: number) => AsyncIterable<JournalRecord>,
  page: number,
): Promise<number> {
  let applied = 0;
  for await (const record of read(store.state.seq)) {
    // The local journal's write is not what makes the record safe (PostgreSQL has it).
    void store.applyShared(record).catch(() => {});
    if (++applied % page === 0) await store.localDurable();
  }
  await store.localDurable();
  return applied;
}

/** Log records applied per wait for the replica's journal (bounds memory in a long catch-up). */
const APPLY_PAGE = 2_000;

export interface ReplicaOptions extends StoreOptions {
  replica_dir: string;
  /** This machine's boot id (default: read from /proc; tests pass another one for a reboot). */
  boot_id?: string | null;
}

/**
 * Opens the replica in `options.replica_dir`: kept from the last run when its stamp and its
 * last record agree with the database, else rebuilt (one warn line says why); then applies
 * the log records after its own. The open leaves the stamp unclean until a clean close.
 */
export async function openReplica(
  pool: pg.Pool,
  options: ReplicaOptions,
  warn: (message: string) => void,
  readLog: (after_seq: number) => AsyncIterable<JournalRecord>,
): Promise<{ store: Store; opened: ReplicaOpened }> {
  const { rows } = await pool.query<{ seq: string; db_id: string }>(
    'SELECT seq, db_id FROM aihub_head WHERE id = 1',
  );
  const head_seq = Number(rows[0]!.seq);
  const db_id = rows[0]!.db_id;
  const dir = options.replica_dir;
  const now = here(options.boot_id === undefined ? currentBootId() : options.boot_id);
  const opened: ReplicaOpened = { applied: 0, rebuilt: null, fresh: false, from_seq: 0 };
  const unclean: ReplicaStamp = { format: 1, db_id, clean: false, ...now };
  // Only the replica this gateway goes on with is stamped closed cleanly by its close.
  let in_use: Store | null = null;
  const open = () =>
    Store.open(dir, {
      ...options,
      // Not fsynced per commit: PostgreSQL holds the record (crashes: see the top of this file).
      journal_sync: false,
      onFatal:
        options.onFatal ??
        ((error) => warn(`the replica's local journal failed (${error.message})`)),
      onClosedCleanly: async () => {
        const stamp = in_use ? closedStamp(dir, db_id, in_use.state.seq, now) : null;
        if (stamp) await writeStamp(dir, stamp);
      },
    });
  const rebuild = async (reason: string | null): Promise<void> => {
    if (reason !== null)
      warn(`rebuilding the replica ${dir} from the database's whole log: ${reason}`);
    opened.rebuilt = reason;
    wipeReplica(dir);
    await writeStamp(dir, unclean);
  };
  const judged = await judgeStamp(dir, db_id, now);
  const kept = 'keep' in judged ? judged.keep : null;
  // Unclean from now until a close has written everything.
  if (kept) await writeStamp(dir, unclean);
  else await rebuild('rebuild' in judged ? judged.rebuild : null);
  let store: Store;
  try {
    store = await open();
  } catch (error) {
    const name = (error as Error).name;
    if (!kept || name === 'LockedError' || name === 'DataDirModeError') throw error;
    await rebuild(`it cannot be opened (${(error as Error).message})`);
    store = await open();
  }
  try {
    const why = kept ? await disagreement(store, pool, head_seq, kept) : null;
    if (why !== null) {
      await store.close();
      await rebuild(why);
      store = await open();
    }
    opened.fresh = store.state.seq === 0;
    opened.from_seq = store.state.seq;
    in_use = store;
    opened.applied = await catchUpAtOpen(store, readLog, APPLY_PAGE);
    return { store, opened };
  } catch (error) {
    // What it applied came from the log: closed, it is stamped clean (the next open catches up).
    await store.close().catch(() => {});
    throw error;
  }
}
