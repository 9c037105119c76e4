// History on disk, read through durable indexes. The journal's JSON-lines segments are the
// append-only history (every finalized payment transaction, posting, usage record, API log
// and audit record is in one of its lines, forever); this module keeps, beside them, index
// lists that point at those lines:
//
//   index/<kind>/<key>.idx   fixed-size entries (ENTRY_BYTES), appended in journal order
//   index/manifest.json      the journal record every list is complete up to, each list's
//                            length at that record, and the aggregates kept with them
//
// Kinds: `txn` (finalized payment transactions, per account and `_all`), `wal` (wallet
// postings with the balance after each), `use` (chat usage), `log` (API logs) and `aud`
// (audit, per account, `_all`, and `_all~<action>`). Finalized transactions by id are in
// sorted runs (id-runs.ts), whose cost does not grow with history; so are the other archived
// tables' final rows (answered idempotency keys), each kept in its run beside its entry: a
// keyed retry is one block read.
// Entries are added once a journal group is durable (never before: an entry never points
// at nothing), kept in memory and written out in batches; the manifest is written with every
// checkpoint after the lists and runs are fsynced (files and directories). At open, every
// list is cut back to its length in the manifest and the journal after the manifest's record
// is indexed again: the tail only. A list shorter than its manifest says (damage: the lists
// are fsynced before a manifest names their lengths) cuts every list back to the last record
// it still holds whole, and the journal is indexed again from there, not from the start.
import {
  closeSync,
  existsSync,
  ftruncateSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { DurableJsonFile } from './durable-file.js';
import type { KeyStats } from './types.js';
import { PRIVATE_FILE_MODE, mkdirPrivate } from './private-files.js';
import { CorruptStoreError, isNoSpace, segmentName } from './journal.js';
import {
  ENTRY_BYTES,
  FileCache,
  IndexList,
  fileKey,
  fsyncAll,
  truncateList,
  type Entry,
  type ReadCounters,
} from './index-list.js';
import { NO_HISTORY_TAGS, TXN_TAGS, logAux, txnTag, type HistoryTags } from './history-tags.js';
import {
  ID_INLINE_MAX,
  ID_RUN_DIR,
  IdRuns,
  removeRun,
  type IdPlace,
  type RunMeta,
} from './id-runs.js';
import {
  ARCHIVED_TABLES,
  isArchivedRow,
  type HistoryRecord,
  type JournalRecord,
  type Op,
  type Posting,
} from './state.js';

export const INDEX_DIR = 'index';
const MANIFEST = 'manifest.json';
/** Unwritten entries past this many (72 bytes each) are written out, to bound memory. */
const MAX_TAIL_ENTRIES = 500_000;
/** A checkpoint writes its lists' entries in slices of at most this many files and about this long, letting commits run between. */
const WRITE_SLICE_LISTS = 256;
const WRITE_SLICE_MS = 2;

export type ListKind = 'txn' | 'wal' | 'use' | 'log' | 'aud';
/** The key of the list of every account's entries. */
export const ALL = '_all';
/** The key of the list of every account's audit records of one action. */
export const allOfAction = (action: string) => `${ALL}~${action}`;

interface Manifest {
  format: 'aihub-index';
  /**
   * 4: id runs in blocks, each small final row beside its entry (a keyed retry is one read);
   * 3: final idempotency records by id too (issue #26), runs of 40-byte entries; 2: id runs
   * of transactions only; 1: id buckets.
   */
  version: 4;
  seq: number;
  max_lag_ms: number;
  /** key → [entries, last ts_ms, last aux, entries per tag (txn lists)?] */
  lists: Record<string, [number, number, number, number[]?]>;
  /** The id runs: [from_seq, to_seq, entries, blocks] (version 3: [from_seq, to_seq, entries], not read). */
  runs: RunMeta[];
  keys: Record<string, [number, number, string | null]>;
  tiers: string[];
  /** Transactions finalized again (see Revision): [id, first seq, first op, [[seq, tag], ...]]. Absent in manifests from before. */
  revisions?: Array<[string, number, number, Array<[number, number]>]>;
}

/**
 * A finalized transaction that was finalized again (a success reversed days later: the row of
 * an archived table set final once more, carrying `revision` >= 1). Its list entries stay where
 * its first finalization put them (lists are in finalization order and a created-at range
 * relies on finalized - created staying small); the newer version is found by id, and reads
 * of those entries take its row and its tag (status) instead. `versions`: each later version's
 * record and tag, oldest first.
 */
interface Revision {
  id: string;
  first_seq: number;
  first_op: number;
  versions: Array<[seq: number, tag: number]>;
}

/** 32-bit FNV-1a: bucket and tag of an id (collisions are resolved by reading the record). */
export function hash32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export class Archive {
  /** Every list by `kind/key` (the manifest's names). */
  private readonly lists = new Map<string, IndexList>();
  /** The same lists by kind, then key: a commit finds its lists without building a name. */
  private readonly by_kind = new Map<string, Map<string, IndexList>>();
  /** The wallet lists by account (by_kind's 'wal'), and wal/_all: every posting to a wallet reaches both. */
  private readonly wal_lists = this.kindMap('wal');
  private wal_all: IndexList | null = null;
  /** The entry a record's ops are indexed through, reused (lists copy what they keep). */
  private readonly entry: Entry = {
    ts_ms: 0,
    seq: 0,
    segment: 0,
    offset: 0,
    length: 0,
    tag: 0,
    aux: 0,
    aux2: 0,
    op: 0,
  };
  /** The last timestamp parsed, and its ms (a record's postings and history share one). */
  private ts_text = '';
  private ts_ms = Number.NaN;
  private readonly dirty = new Set<IndexList>();
  /** Lists appended to since the last manifest: fsynced before the next one names their lengths. */
  private readonly unsynced = new Set<string>();
  private readonly made_dirs = new Set<string>();
  /** Directories given a new file since the last manifest: fsynced before it too. */
  private readonly new_entries_in = new Set<string>();
  private tail_entries = 0;
  /** Lists whose taken entries (a checkpoint's cut) are written out in order; `next_taken` is the next. */
  private taken_lists: IndexList[] = [];
  private next_taken = 0;
  private readonly files = new FileCache();
  private readonly ids: IdRuns;
  readonly keys = new Map<string, KeyStats>();
  private readonly tiers: string[] = [];
  /** Transactions finalized again, by the record of their first finalization (its list entries), and by id. */
  private readonly revised = new Map<number, Revision[]>();
  private readonly revised_ids = new Map<string, Revision>();
  /** The largest (finalized - created) seen: a transaction created at t is listed by t + max_lag_ms. */
  max_lag_ms = 0;
  /** Every record up to this one is in the indexes (in memory; on disk at the last manifest). */
  seq = 0;
  /**
   * After a repair at open: the records up to `manifest_seq` are indexed again only into
   * what was cut (lists after `lists_from`, id entries in `id_ranges`); per-key figures, kept
   * in the manifest, are counted from `manifest_seq` on.
   */
  private manifest_seq = 0;
  private lists_from = 0;
  private id_ranges: Array<[number, number]> = [];
  /** Repairs done at open (tests read it): lists cut back, id runs dropped. */
  readonly repaired = { lists: 0, runs: 0, from_seq: 0 };
  readonly counters: ReadCounters = { entries: 0, records: 0, inline_rows: 0 };
  private readonly manifest_file: DurableJsonFile<Manifest>;

  private constructor(
    readonly data_dir: string,
    private readonly journal_dir: string,
    /** What the rooms tag records with (txn and log entries keep the codes). */
    readonly tags: HistoryTags,
  ) {
    this.manifest_file = new DurableJsonFile<Manifest>(join(data_dir, INDEX_DIR, MANIFEST));
    this.ids = new IdRuns(join(data_dir, INDEX_DIR));
  }

  /**
   * Opens the indexes as of their manifest: lists longer than the manifest says (written
   * after it) are cut back, lists it does not know are removed. The caller then indexes the
   * journal after `seq`. Without a manifest (a data dir from before the indexes, one whose
   * indexes were removed, or one of the manifest before version 2) everything is indexed
   * again from the first record. A list shorter than its manifest says cuts every list back
   * to the last record it holds, and `seq` goes back there (the journal tail from there).
   */
  static async open(
    data_dir: string,
    journal_dir: string,
    options: {
      read_only?: boolean;
      warn?: (message: string) => void;
      history_tags?: HistoryTags;
    } = {},
  ): Promise<Archive> {
    const archive = new Archive(data_dir, journal_dir, options.history_tags ?? NO_HISTORY_TAGS);
    const dir = join(data_dir, INDEX_DIR);
    if (!options.read_only) archive.manifest_file.removeStaleTemps();
    const manifest = await archive.readManifest(dir, options);
    if (!manifest) {
      if (!options.read_only) {
        for (const kind of existsSync(dir) ? readdirSync(dir) : [])
          if (kind !== MANIFEST) rmSync(join(dir, kind), { recursive: true, force: true });
        rmSync(join(dir, MANIFEST), { force: true });
      }
      return archive;
    }
    archive.seq = manifest.seq;
    archive.manifest_seq = manifest.seq;
    archive.lists_from = manifest.seq;
    archive.max_lag_ms = manifest.max_lag_ms;
    archive.tiers.push(...manifest.tiers);
    for (const [key_id, [requests, cost_micros, last_used]] of Object.entries(manifest.keys))
      archive.keys.set(key_id, { requests, cost_micros, last_used });
    for (const [id, first_seq, first_op, versions] of manifest.revisions ?? [])
      archive.remember({ id, first_seq, first_op, versions });
    const { known, short } = archive.openLists(manifest, options.read_only === true);
    if (manifest.version === 3) {
      // Id runs of version 3 (40-byte entries, no rows beside them): dropped, and the ids of
      // every record up to the manifest's indexed again from the journal into runs of
      // version 4 (lists and figures are kept: a pass over the journal that writes runs
      // only). Until a manifest of version 4 is durable the old one stays, and a crash
      // meanwhile begins this again.
      archive.ids.open([], false);
      archive.repairShort(dir, manifest.seq, short, [[1, manifest.seq]], options, 'upgrade');
    } else {
      const damaged_runs = archive.ids.open(manifest.runs, options.read_only === true);
      if (short.length > 0 || damaged_runs.length > 0)
        archive.repairShort(dir, manifest.seq, short, damaged_runs, options);
    }
    if (!options.read_only) removeUnknownLists(dir, known);
    return archive;
  }

  /**
   * The manifest, if it is one this gateway reads (version 4, or 3 whose id runs are built
   * again); null for one of version 1 or 2 (everything indexed again).
   */
  private async readManifest(
    dir: string,
    options: { read_only?: boolean; warn?: (message: string) => void },
  ): Promise<(Omit<Manifest, 'version'> & { version: 3 | 4 }) | null> {
    let manifest = await this.manifest_file.read();
    if (manifest && (manifest.format !== 'aihub-index' || (manifest.version as number) > 4))
      throw new CorruptStoreError(
        `${join(dir, MANIFEST)} is not an AIHub index manifest of version 1 to 4`,
      );
    const version = manifest?.version as number | undefined;
    if (manifest && version === 3 && options.read_only)
      throw new CorruptStoreError(
        `the id runs in ${dir} are of version 3; start the gateway once to rebuild them`,
      );
    if (manifest && version !== 3 && version !== 4) {
      if (options.read_only)
        throw new CorruptStoreError(
          `the indexes in ${dir} are of version ${version}; start the gateway once to rebuild them`,
        );
      // Version 2 indexed no idempotency record by id: those the checkpoint still holds live
      // are dropped from it as it is read (they are final), and found through the id runs
      // built now, from the first record.
      options.warn?.(
        version === 1
          ? `the indexes in ${dir} are of version 1 (id buckets); indexing the journal again for version 4 (id runs)`
          : `the indexes in ${dir} are of version 2 (no idempotency keys by id); indexing the journal again for version 4, once`,
      );
      manifest = null;
    }
    return manifest;
  }

  /**
   * Each list of the manifest as it says: longer ones cut back (unless read only), shorter ones
   * (damage) kept to their whole entries and named in `short`; `known` holds their files.
   */
  private openLists(
    manifest: Pick<Manifest, 'lists'>,
    read_only: boolean,
  ): { known: Set<string>; short: string[] } {
    const known = new Set<string>();
    const short: string[] = [];
    for (const [key, [count, last_ts, last_aux, tags]] of Object.entries(manifest.lists)) {
      const list = this.list(key);
      known.add(list.file);
      const size = existsSync(list.file) ? statSync(list.file).size : 0;
      if (size > count * ENTRY_BYTES && !read_only) truncateList(list.file, count * ENTRY_BYTES);
      if (size < count * ENTRY_BYTES) {
        // Damage (lists are fsynced before a manifest names them): whole entries are kept.
        short.push(key);
        list.disk = Math.floor(size / ENTRY_BYTES);
      } else list.disk = count;
      list.last_ts = last_ts;
      list.last_aux = last_aux;
      if (tags) list.tag_counts = [...tags, ...new Array<number>(TXN_TAGS - tags.length).fill(0)];
    }
    return { known, short };
  }

  /**
   * Lists or id runs shorter than the manifest says: every list goes back to the last record
   * the shortest one holds whole, and `seq` back to there (or to the first damaged run).
   */
  private repairShort(
    dir: string,
    manifest_seq: number,
    short: string[],
    damaged_runs: Array<[number, number]>,
    options: { read_only?: boolean; warn?: (message: string) => void },
    why: 'damage' | 'upgrade' = 'damage',
  ): void {
    if (options.read_only)
      throw new CorruptStoreError(
        `indexes in ${dir} hold fewer entries than their manifest says; start the gateway once to repair them from the journal`,
      );
    // Every list back to the last record the shortest one holds whole.
    let cut_seq = manifest_seq;
    for (const key of short) {
      const list = this.lists.get(key)!;
      cut_seq = Math.min(cut_seq, list.disk > 0 ? list.read(list.disk - 1, list.disk)[0]!.seq : 0);
    }
    // A record's ops may fill several entries of one list: the last record is indexed again whole.
    if (short.length > 0) cut_seq = Math.max(0, cut_seq - 1);
    // Versions after the cut are indexed again from the journal, with the lists.
    for (const revision of [...this.revised_ids.values()]) {
      revision.versions = revision.versions.filter(([seq]) => seq <= cut_seq);
      if (revision.versions.length === 0) this.forget(revision);
    }
    for (const list of this.lists.values()) if (list.count > 0) this.cutList(list, cut_seq);
    this.lists_from = cut_seq;
    this.id_ranges = damaged_runs;
    this.seq = Math.min(cut_seq, ...damaged_runs.map(([from]) => from - 1));
    this.repaired.lists = short.length;
    this.repaired.runs = damaged_runs.length;
    this.repaired.from_seq = this.seq;
    if (why === 'upgrade')
      options.warn?.(
        `the id runs in ${dir} are of version 3 (no rows beside their entries); indexing the journal's ids again for version 4 (a keyed retry in one read), once`,
      );
    if (why === 'damage' || short.length > 0)
      options.warn?.(
        `${short.length} index lists and ${damaged_runs.length} id runs were shorter than their manifest says (a power loss?); indexing the journal again from record ${this.seq + 1}`,
      );
  }

  /** Cuts a list back to its entries of records up to `seq` (entries are in record order), with the figures kept beside it. */
  private cutList(list: IndexList, seq: number): void {
    let low = 0;
    let high = list.disk;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (list.read(mid, mid + 1)[0]!.seq <= seq) low = mid + 1;
      else high = mid;
    }
    if (low === list.disk && statSync(list.file).size === low * ENTRY_BYTES) return;
    truncateList(list.file, low * ENTRY_BYTES);
    this.files.forget(list.file);
    list.disk = low;
    const last = low > 0 ? list.read(low - 1, low)[0]! : null;
    list.last_ts = last ? last.ts_ms : -Infinity;
    list.last_aux = last ? last.aux : 0;
    if (list.tag_counts) {
      const counts = new Array<number>(TXN_TAGS).fill(0);
      list.walk(0, low, (entry) => {
        counts[this.tagOf(entry)]!++;
        return true;
      });
      list.tag_counts = counts;
    }
  }

  /** The list of a kind and key (an account id, ALL, or a bucket), created on first use. */
  list(key: string): IndexList;
  list(kind: ListKind, key: string): IndexList;
  list(kind_or_key: string, key?: string): IndexList {
    if (key === undefined) {
      const slash = kind_or_key.indexOf('/');
      return this.list(kind_or_key.slice(0, slash) as ListKind, kind_or_key.slice(slash + 1));
    }
    const of_kind = this.kindMap(kind_or_key);
    let list = of_kind.get(key);
    if (!list) {
      const full = `${kind_or_key}/${key}`;
      list = new IndexList(
        full,
        join(this.data_dir, INDEX_DIR, kind_or_key, `${fileKey(key)}.idx`),
        this.files,
        this.counters,
      );
      this.lists.set(full, list);
      of_kind.set(key, list);
    }
    return list;
  }

  private kindMap(kind: string): Map<string, IndexList> {
    let of_kind = this.by_kind.get(kind);
    if (!of_kind) this.by_kind.set(kind, (of_kind = new Map()));
    return of_kind;
  }

  /** The list if it has entries; else null (no file is made for a read). */
  existing(kind: ListKind, key: string): IndexList | null {
    const list = this.by_kind.get(kind)?.get(key);
    return list && list.count > 0 ? list : null;
  }

  /** Adds `entry` (its ts_ms clamped to the list's last) to the list of a kind and key. */
  private add(kind: ListKind, key: string, entry: Entry): void {
    if (entry.seq <= this.lists_from) return; // in the lists already (a repair indexes what was cut)
    this.addTo(kind, this.list(kind, key), entry);
  }

  private addTo(kind: ListKind, list: IndexList, entry: Entry): void {
    if (entry.seq <= this.lists_from) return;
    const ts_ms = Math.max(entry.ts_ms, list.last_ts);
    // A list with no unwritten entries is not in `dirty` (writeTails empties both together).
    if (list.tail_length === 0) this.dirty.add(list);
    list.push(entry, ts_ms);
    list.last_ts = ts_ms;
    list.last_aux = entry.aux;
    if (kind === 'txn') (list.tag_counts ??= new Array<number>(TXN_TAGS).fill(0))[entry.tag]!++;
    this.tail_entries++;
  }

  /** Date.parse, once for a run of equal timestamps. */
  private parseTs(text: string): number {
    if (text !== this.ts_text) {
      this.ts_text = text;
      this.ts_ms = Date.parse(text);
    }
    return this.ts_ms;
  }

  /** Id entries of records up to the manifest's are in its runs, but for the ranges of runs a repair dropped. */
  private wantsIds(seq: number): boolean {
    return seq > this.manifest_seq || this.id_ranges.some(([from, to]) => seq >= from && seq <= to);
  }

  tierCode(tier: string): number {
    let code = this.tiers.indexOf(tier);
    if (code === -1) code = this.tiers.push(tier) - 1;
    return code;
  }

  tierName(code: number): string {
    return this.tiers[code] ?? 'other';
  }

  /** Indexes one durable journal record found at byte `offset` of segment `segment`, `length` bytes long. Records at or below `seq` are skipped. */
  apply(record: JournalRecord, segment: number, offset: number, length: number): void {
    if (record.s <= this.seq) return;
    if (this.id_ranges.length > 0 && record.s > this.manifest_seq) {
      // The repair is done: what it indexed again becomes a run of its own, then the tail.
      this.ids.flush();
      this.id_ranges = [];
    }
    const entry = this.entry;
    entry.seq = record.s;
    entry.segment = segment;
    entry.offset = offset;
    entry.length = length;
    const ops = record.ops;
    for (let index = 0; index < ops.length; index++) {
      entry.op = index;
      this.applyOp(ops[index]!, entry);
    }
    this.seq = record.s;
    if (this.tail_entries > MAX_TAIL_ENTRIES && this.tail_entries > this.tails_again_at) {
      // The memory bound, while a journal group is placed: a disk without room leaves the
      // entries in memory (tried again a fifth further on, or at the next manifest) rather
      // than stop the journal.
      try {
        this.writeTails();
        this.tails_again_at = 0;
      } catch (error) {
        if (!isNoSpace(error)) throw error;
        this.tails_again_at = this.tail_entries + MAX_TAIL_ENTRIES / 5;
      }
    }
  }

  /** After writeTails found no room: the count of unwritten entries at which it tries again. */
  private tails_again_at = 0;

  /** Indexes one op of a record: `entry` holds the record's place and the op's index; the rest is filled here. */
  private applyOp(op: Op, entry: Entry): void {
    if (op.o === 'post') {
      this.applyPosting(op.p, entry);
    } else if (op.o === 'set' && isArchivedRow(op.t, op.v)) {
      // Every final row is found by its id (id runs); a payment transaction is listed too, and
      // read through its journal line; another row is kept beside its entry when it is small.
      if (op.t === 'payment_txns') {
        this.applyTxn(op.v as ArchivedTxn, entry);
        this.addId(op.id, entry, null);
      } else this.addId(op.id, entry, op);
    } else if (op.o === 'hist') {
      this.applyHistory(op.r, entry);
    } else if (op.o === 'del' && op.t === 'keys' && entry.seq > this.manifest_seq) {
      // A key deleted (an old revoked one: accounts.ts) takes its figures with it.
      this.keys.delete(op.id);
    }
  }

  /**
   * A finalized payment transaction: its account's list and every account's, or, finalized
   * again (a revision), the lists' counts moved to its new status.
   */
  private applyTxn(txn: ArchivedTxn, entry: Entry): void {
    if (txn.revision !== undefined && txn.revision > 0) {
      this.revise(txn, entry);
      return;
    }
    const finalized_ms = this.parseTs(txn.finalized_at ?? txn.updated_at);
    const created_ms = Date.parse(txn.created_at);
    this.max_lag_ms = Math.max(this.max_lag_ms, finalized_ms - created_ms);
    entry.ts_ms = finalized_ms;
    entry.tag = txnTag(this.tags, txn.service, txn.status);
    entry.aux = created_ms;
    entry.aux2 = txn.amount_micros;
    this.add('txn', txn.account_id, entry);
    this.add('txn', ALL, entry);
  }

  /** The id entry of a final row; with `row`, the row kept beside it (`[table, id, row]`) if its JSON is small. */
  private addId(id: string, entry: Entry, row: { t: string; v: unknown } | null): void {
    if (!this.wantsIds(entry.seq)) return;
    const place: IdPlace = {
      hash: hash32(id),
      op: entry.op,
      seq: entry.seq,
      segment: entry.segment,
      offset: entry.offset,
      length: entry.length,
    };
    if (row) {
      const inline = Buffer.from(JSON.stringify([row.t, id, row.v]), 'utf8');
      if (inline.length <= ID_INLINE_MAX) place.inline = inline;
    }
    this.ids.add(place);
  }

  /**
   * A transaction finalized again: no list entry (its first one stays), the lists' tag counts
   * move from its last status to this one, and reads of its first entry take this version.
   */
  private revise(txn: ArchivedTxn, entry: Entry): void {
    if (entry.seq <= this.lists_from) return; // known from the manifest already
    const tag = txnTag(this.tags, txn.service, txn.status);
    let revision = this.revised_ids.get(txn.id);
    let was: number;
    if (revision) {
      was = revision.versions.at(-1)![1];
      revision.versions.push([entry.seq, tag]);
    } else {
      // The first finalization (the version without a revision number; its place is the list
      // entry). The id index may hold later versions already (a repair indexes them again).
      let first: { seq: number; op: number; tag: number } | null = null;
      this.ids.find(hash32(txn.id), (place) => {
        if (place.seq >= entry.seq) return true;
        const op = this.record({ ...place, ts_ms: 0, tag: 0, aux: 0, aux2: 0 }).ops[place.op];
        if (op?.o !== 'set' || op.t !== 'payment_txns' || op.id !== txn.id) return true;
        if (!isArchivedRow(op.t, op.v)) return true;
        const v = op.v as ArchivedTxn;
        if (v.revision !== undefined && v.revision > 0) return true;
        first = { seq: place.seq, op: place.op, tag: txnTag(this.tags, v.service, v.status) };
        return false;
      });
      if (first === null)
        throw new CorruptStoreError(
          `record ${entry.seq} finalizes transaction ${txn.id} again, but its first finalization is in no index`,
        );
      const found: { seq: number; op: number; tag: number } = first;
      was = found.tag;
      revision = { id: txn.id, first_seq: found.seq, first_op: found.op, versions: [] };
      revision.versions.push([entry.seq, tag]);
      this.remember(revision);
    }
    for (const key of [txn.account_id, ALL]) {
      const counts = this.by_kind.get('txn')?.get(key)?.tag_counts;
      if (!counts) continue;
      counts[was] = Math.max(0, counts[was]! - 1);
      counts[tag]!++;
    }
  }

  private remember(revision: Revision): void {
    this.revised_ids.set(revision.id, revision);
    const at = this.revised.get(revision.first_seq);
    if (at) at.push(revision);
    else this.revised.set(revision.first_seq, [revision]);
  }

  private forget(revision: Revision): void {
    this.revised_ids.delete(revision.id);
    const at = this.revised.get(revision.first_seq)?.filter((r) => r !== revision) ?? [];
    if (at.length > 0) this.revised.set(revision.first_seq, at);
    else this.revised.delete(revision.first_seq);
  }

  /** The revision of the transaction a txn entry indexes, if it was finalized again. */
  private revisionOf(entry: Entry): Revision | undefined {
    if (this.revised.size === 0) return undefined;
    return this.revised.get(entry.seq)?.find((r) => r.first_op === entry.op);
  }

  /** A txn entry's tag as of its transaction's newest version (its status may have changed since). */
  tagOf(entry: Entry): number {
    const revision = this.revisionOf(entry);
    return revision ? revision.versions.at(-1)![1] : entry.tag;
  }

  private applyPosting(posting: Posting, entry: Entry): void {
    const account_id = posting.account_id;
    if (!account_id) return;
    let delta = 0;
    let touches = false;
    const entries = posting.entries;
    for (let i = 0; i < entries.length; i++) {
      const posted = entries[i]!;
      if (isWalletOf(posted[0], account_id)) {
        delta += posted[1];
        touches = true;
      }
    }
    if (!touches) return;
    const own = this.wal_lists.get(account_id) ?? this.list('wal', account_id);
    entry.ts_ms = this.parseTs(posting.ts);
    entry.tag = delta;
    entry.aux = (own.count > 0 ? own.last_aux : 0) + delta;
    entry.aux2 = 0;
    this.addTo('wal', own, entry);
    this.addTo('wal', (this.wal_all ??= this.list('wal', ALL)), entry);
  }

  private applyHistory(record: HistoryRecord, entry: Entry): void {
    const ts_ms = this.parseTs(record.ts);
    const account_id = typeof record.account_id === 'string' ? record.account_id : null;
    const key_id = typeof record.key_id === 'string' ? record.key_id : null;
    const cost_micros =
      typeof record.cost_micros === 'number' && Number.isSafeInteger(record.cost_micros)
        ? record.cost_micros
        : 0;
    if (key_id && entry.seq > this.manifest_seq) {
      const stats = this.keys.get(key_id) ?? { requests: 0, cost_micros: 0, last_used: null };
      stats.requests++;
      stats.cost_micros += cost_micros;
      if (!stats.last_used || record.ts > stats.last_used) stats.last_used = record.ts;
      this.keys.set(key_id, stats);
    }
    if (record.type === 'usage' && account_id) {
      const tokens = num(record.prompt_tokens) + num(record.completion_tokens);
      entry.ts_ms = ts_ms;
      entry.tag = this.tierCode(typeof record.tier === 'string' ? record.tier : 'other');
      entry.aux = cost_micros;
      entry.aux2 = tokens;
      this.add('use', account_id, entry);
    } else if (record.type === 'api_log') {
      entry.ts_ms = ts_ms;
      entry.tag = typeof record.status === 'number' ? record.status : 0;
      entry.aux = logAux(this.tags, record);
      entry.aux2 = num(record.latency_ms);
      if (account_id) this.add('log', account_id, entry);
      this.add('log', ALL, entry);
    } else if (record.type === 'audit') {
      entry.ts_ms = ts_ms;
      entry.tag = hash32(String(record.action ?? ''));
      entry.aux = 0;
      entry.aux2 = 0;
      if (account_id) this.add('aud', account_id, entry);
      this.add('aud', ALL, entry);
      this.add('aud', allOfAction(String(record.action ?? '')), entry);
    }
  }

  /** The journal line an entry points at, parsed. */
  record(entry: Entry): JournalRecord {
    this.counters.records++;
    const file = join(this.journal_dir, segmentName(entry.segment));
    const bytes = Buffer.alloc(entry.length);
    const fd = this.files.get(file);
    let done = 0;
    while (done < bytes.length) {
      const n = readSync(fd, bytes, done, bytes.length - done, entry.offset + done);
      if (n === 0)
        throw new CorruptStoreError(`index points past the end of ${file} (record ${entry.seq})`);
      done += n;
    }
    const record = JSON.parse(bytes.toString('utf8')) as JournalRecord;
    if (record.s !== entry.seq)
      throw new CorruptStoreError(
        `index points at record ${record.s} of ${file} where record ${entry.seq} was expected`,
      );
    return record;
  }

  /** Blocks of id runs read by lookups by id so far (the bench prints it per lookup). */
  get id_blocks_read(): number {
    return this.ids.blocks_read;
  }

  /**
   * The final row `id` of an archived table (ARCHIVED_TABLES), from its newest archived
   * version: the id runs say where (about one block read), the journal line holds it. A row
   * with several versions (a key used afresh past its window) is read at each and the newest
   * kept: after a repair the runs need not hold an id's versions newest first.
   */
  archivedRow(table: string, id: string): unknown {
    if (table === 'payment_txns') return this.archivedTxn(id);
    let found: unknown;
    let found_seq = -1;
    this.ids.find(hash32(id), (place) => {
      if (place.seq <= found_seq) return true;
      if (place.inline) {
        // The row beside its entry: read with the block, no journal line.
        this.counters.inline_rows++;
        const [t, row_id, v] = JSON.parse(place.inline.toString('utf8')) as [
          string,
          string,
          unknown,
        ];
        if (t === table && row_id === id) {
          found = v;
          found_seq = place.seq;
        }
        return true;
      }
      const op = this.record({ ...place, ts_ms: 0, tag: 0, aux: 0, aux2: 0 }).ops[place.op];
      if (op?.o === 'set' && op.t === table && op.id === id && isArchivedRow(op.t, op.v)) {
        found = op.v;
        found_seq = place.seq;
      }
      return true;
    });
    return found;
  }

  /** The finalized payment transaction with this id, from its newest archived version. */
  archivedTxn(id: string): ArchivedTxn | undefined {
    // A transaction finalized again: the version of its newest record (whatever order the
    // runs hold its versions in); any other has one version.
    const newest = this.revised_ids.get(id)?.versions.at(-1)![0];
    let found: ArchivedTxn | undefined;
    this.ids.find(hash32(id), (place) => {
      if (newest !== undefined && place.seq !== newest) return true;
      const op = this.record({ ...place, ts_ms: 0, tag: 0, aux: 0, aux2: 0 }).ops[place.op];
      if (op?.o === 'set' && op.t === 'payment_txns' && op.id === id && isArchivedRow(op.t, op.v))
        found = op.v as ArchivedTxn;
      return found === undefined;
    });
    return found;
  }

  /** The finalized transaction a txn entry indexes, as of its newest version. */
  txnOf(entry: Entry): ArchivedTxn {
    const revision = this.revisionOf(entry);
    if (revision) {
      const newest = this.archivedTxn(revision.id);
      if (!newest)
        throw new CorruptStoreError(`transaction ${revision.id} has no version in the id index`);
      return newest;
    }
    const op = this.record(entry).ops[entry.op];
    if (op?.o !== 'set' || !isArchivedRow(op.t, op.v))
      throw new CorruptStoreError(
        `record ${entry.seq} holds no finalized transaction at op ${entry.op}`,
      );
    return op.v as ArchivedTxn;
  }

  /** The history record an entry indexes. */
  historyOf(entry: Entry): HistoryRecord {
    const op = this.record(entry).ops[entry.op];
    if (op?.o !== 'hist')
      throw new CorruptStoreError(`record ${entry.seq} holds no history record at op ${entry.op}`);
    return op.r;
  }

  /** The posting a wallet entry indexes. */
  postingOf(entry: Entry): Posting {
    const op = this.record(entry).ops[entry.op];
    if (op?.o !== 'post')
      throw new CorruptStoreError(`record ${entry.seq} holds no posting at op ${entry.op}`);
    return op.p;
  }

  /** Moves every dirty list's unwritten entries to its taken part: synchronous, no I/O. */
  private takeTails(): void {
    for (const list of this.dirty) {
      if (list.tail_length === 0) continue;
      list.takeTail();
      this.taken_lists.push(list);
    }
    this.dirty.clear();
    this.tail_entries = 0;
  }

  /** Appends one list's taken entries to its file (little-endian doubles, as Float64Array holds them), made with its directory if new. */
  private writeTaken(list: IndexList): void {
    const dir = join(list.file, '..');
    if (!this.made_dirs.has(dir)) {
      if (!existsSync(dir)) this.new_entries_in.add(join(dir, '..'));
      mkdirPrivate(dir);
      this.made_dirs.add(dir);
    }
    if (list.disk === 0) this.new_entries_in.add(dir);
    const bytes = list.takenBytes();
    const fd = openSync(list.file, 'a', PRIVATE_FILE_MODE);
    try {
      let done = 0;
      while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
    } catch (error) {
      // Cut short (a full disk): the file ends at its written entries again, the taken ones
      // stay in memory and are written by the next write-out.
      ftruncateSync(fd, list.disk * ENTRY_BYTES);
      throw error;
    } finally {
      closeSync(fd);
    }
    list.wroteTaken();
    this.unsynced.add(list.file);
    this.files.forget(list.file);
  }

  /** List files of the last cut still to be written (a checkpoint's write-out in progress). */
  get lists_to_write(): number {
    return this.taken_lists.length - this.next_taken;
  }

  /** Writes what is left of the taken lists, at once (a write-out in slices finds nothing left). */
  private writeTakenNow(): void {
    while (this.next_taken < this.taken_lists.length) {
      this.writeTaken(this.taken_lists[this.next_taken]!);
      this.next_taken++;
    }
    this.taken_lists = [];
    this.next_taken = 0;
  }

  /**
   * Writes the taken lists a slice of about WRITE_SLICE_MS at a time, letting commits and
   * reads run between slices: a checkpoint after thousands of accounts moved writes (and at
   * first makes) thousands of list files, which at once stalled every commit for seconds.
   */
  private async writeTakenInSlices(): Promise<void> {
    while (this.next_taken < this.taken_lists.length) {
      const started = performance.now();
      const slice_end = Math.min(this.taken_lists.length, this.next_taken + WRITE_SLICE_LISTS);
      do {
        this.writeTaken(this.taken_lists[this.next_taken]!); // advanced once written (see writeTaken)
        this.next_taken++;
      } while (this.next_taken < slice_end && performance.now() - started < WRITE_SLICE_MS);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.taken_lists = [];
    this.next_taken = 0;
  }

  /** Writes every unwritten entry out now (the memory bound, while records are indexed). */
  private writeTails(): void {
    this.writeTakenNow();
    this.takeTails();
    this.writeTakenNow();
  }

  /**
   * Writes the manifest as of `seq` (everything indexed so far): the id runs are merged as
   * their policy says, then, in one synchronous step, the tails are written and the id
   * memtable becomes a run, and the lengths are taken; the lists written since the last
   * manifest and the directories given new files are fsynced (on the thread pool, a few at a
   * time), and only then is the manifest replaced. So after a power loss no list is shorter
   * than the manifest says unless the disk lost fsynced data, and then open repairs it from
   * the journal after the last record it holds. Records are indexed once their journal lines
   * are written, while their fdatasync may still be in flight: `durable(seq)` resolves once
   * the journal is durable up to `seq`, and the manifest waits for it, so that it never
   * names a record a power loss could take from the journal.
   */
  sync(durable: (seq: number) => Promise<void>): Promise<void> {
    // One at a time: a second cut while the first one's taken entries are still being
    // written would take them again (and the id runs would merge twice).
    const run = this.syncing.then(() => this.syncNow(durable));
    this.syncing = run.catch(() => {});
    return run;
  }

  private syncing: Promise<void> = Promise.resolve();

  private async syncNow(durable: (seq: number) => Promise<void>): Promise<void> {
    // What an earlier write-out that failed (a full disk) left taken is written before a new
    // cut takes more (a list holds one taken part at a time).
    await this.writeTakenInSlices();
    await this.ids.compact();
    // The cut, in one synchronous step: every list's entries so far are taken (its length
    // then is what the manifest names), the id memtable becomes a run, the figures are read.
    this.takeTails();
    this.ids.flush();
    const seq = this.seq;
    const lists: Manifest['lists'] = Object.create(null) as Manifest['lists'];
    for (const [key, list] of this.lists) {
      const length = list.count;
      if (length > 0)
        lists[key] = list.tag_counts
          ? [length, list.last_ts, list.last_aux, [...list.tag_counts]]
          : [length, list.last_ts, list.last_aux];
    }
    const keys: Manifest['keys'] = Object.create(null) as Manifest['keys'];
    for (const [key_id, stats] of this.keys)
      keys[key_id] = [stats.requests, stats.cost_micros, stats.last_used];
    const runs = this.ids.metas();
    const revisions: NonNullable<Manifest['revisions']> = [...this.revised_ids.values()].map(
      (r) => [r.id, r.first_seq, r.first_op, r.versions.map(([seq, tag]) => [seq, tag])],
    );
    const retired = this.ids.takeRetired();
    await this.writeTakenInSlices();
    const files = [...this.unsynced];
    const dirs = [...this.new_entries_in];
    this.unsynced.clear();
    this.new_entries_in.clear();
    await fsyncAll(files);
    // On the thread pool too: a directory's fsync waits for the disk as a file's does, and on
    // the event loop it stalled every commit meanwhile (the first checkpoint makes index/ and
    // its kinds' directories).
    await fsyncAll(dirs);
    await durable(seq);
    mkdirPrivate(join(this.data_dir, INDEX_DIR));
    await this.manifest_file.write({
      format: 'aihub-index',
      version: 4,
      seq,
      max_lag_ms: this.max_lag_ms,
      lists,
      runs,
      keys,
      tiers: this.tiers,
      ...(this.revised_ids.size > 0 ? { revisions } : {}),
    });
    for (const file of retired) removeRun(file);
  }

  close(): void {
    this.files.close();
    this.ids.close();
  }
}

/** `ledger_account === \`wallet:${account_id}\``, without building the name for every posting. */
function isWalletOf(ledger_account: string, account_id: string): boolean {
  return (
    ledger_account.length === account_id.length + 7 &&
    ledger_account.startsWith('wallet:') &&
    ledger_account.endsWith(account_id)
  );
}

const num = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : 0;

/** The fields of a payment transaction the store itself relies on to archive and index it. */
export interface ArchivedTxn {
  id: string;
  account_id: string;
  service: string;
  status: string;
  stage: string;
  amount_micros: number;
  created_at: string;
  updated_at: string;
  finalized_at: string | null;
  /** 1, 2...: a version of a transaction that was final already (see Revision); absent on the first. */
  revision?: number;
}

// ARCHIVED_TABLES and isArchivedRow live in state.ts, where applyOp needs them without a cycle.
export { ARCHIVED_TABLES, isArchivedRow };

/** Removes the lists no manifest names (begun after it): the journal tail makes them again. */
function removeUnknownLists(dir: string, known: Set<string>): void {
  for (const kind of existsSync(dir) ? readdirSync(dir) : []) {
    if (kind === MANIFEST || kind.endsWith('.tmp') || kind === ID_RUN_DIR) continue;
    for (const name of readdirSync(join(dir, kind)))
      if (!known.has(join(dir, kind, name))) rmSync(join(dir, kind, name), { force: true });
  }
}
