// Final rows of the archived tables by id (payment transactions, answered idempotency keys,
// split transfers), at a cost that does not grow with history: an LSM-like index of sorted
// immutable runs.
//
//   index/idrun/<from_seq>-<to_seq>.run         blocks of ID_BLOCK_BYTES, entries sorted by (id hash, seq)
//   index/idrun/<from_seq>-<to_seq>.run.fence   the first hash of every block (derived)
//   index/idrun/<from_seq>-<to_seq>.run.bloom   the run's membership filter (derived)
//
// A block (8 kB, aligned in its file, read by one pread) holds a u32 count of entries, then entries
// that never straddle a block: the id's hash, the op's index in its journal record, the
// record's seq and place in the journal (segment, offset, length), and the final row itself
// when it is small (`inline`: `[table, id, row]` as JSON, at most ID_INLINE_MAX bytes; the
// answered idempotency keys: a retry's answer, about 550 bytes with its key). So a keyed
// retry is answered by ONE random read however long the history: the filters and the fences
// in memory say which block, the block holds the answer. An entry without its row (payment
// transactions, which are listed and read through the journal anyway, and rows too big)
// sends its reader to the journal line.
//
// New entries wait in memory (the memtable) until the next manifest; then they are sorted
// and written as one run (fsynced before the manifest names it), and the newest runs are
// merged while the newer is at least half the older (a binary counter: at most log2 of
// history / run size runs). Every run keeps in memory the first hash of each of its blocks
// (its fences, 4 bytes per block), so a lookup is, per run, a binary search in memory and
// one pread of one block. Every run also keeps a membership filter of its hashes
// (id-filter.ts, 10 bits per entry), and a lookup reads a block only of the runs whose
// filter says the hash may be there: about one block per lookup (the run that holds the id,
// plus a false positive in fewer than 1 run in 100), however many runs there are; an id
// never used reads no block at all, but for those false positives.
// Runs cover disjoint, contiguous ranges of journal records; a merged run replaces its two
// in the next manifest, and they are removed only after that manifest is durable.
// Runs of index manifests before version 4 (entries of 40 bytes, no rows) are not read: the
// archive drops them and indexes the journal's ids again, once (archive.ts).
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { IdFilter } from './id-filter.js';
import { fsyncDirectory, isNoSpace } from './fs-durable.js';
import { CorruptStoreError } from './journal.js';
import { PRIVATE_FILE_MODE, mkdirPrivate } from './private-files.js';

export const ID_RUN_DIR = 'idrun';
/**
 * A run's unit of reading and writing: two pages, aligned in the file, read by one pread (one
 * random read). 8 kB rather than 4: a block holds 14 answered keys, so the fences in memory
 * are 4 bytes per 14 keys (0.3 MB per million), not per 7.
 */
export const ID_BLOCK_BYTES = 8192;
/** A block begins with its count of entries (u32). */
const BLOCK_HEADER = 4;
/** hash u32, op u32, then seq, segment, offset and length as doubles, then the inline row's length (u32, 0: none). */
const ENTRY_HEAD = 44;
/** The largest row kept beside its entry (JSON bytes); a bigger one is read from its journal line. */
export const ID_INLINE_MAX = 1024;
/** Entries waiting in memory past this many are written as a run before the next manifest (bounded memory). */
const MAX_MEMTABLE = 262_144;
/** ...or past this many bytes of rows kept beside them. */
const MAX_MEMTABLE_BYTES = 32 * 1024 * 1024;
/** Blocks per read when runs are merged or a filter is built again (256 kB). */
const CHUNK_BLOCKS = 64;
/** Entries merged between two turns of the event loop. */
const MERGE_CHUNK = 16_384;

export interface IdPlace {
  hash: number;
  op: number;
  seq: number;
  segment: number;
  offset: number;
  length: number;
  /** The final row, `[table, id, row]` as JSON, when it was small enough to keep beside its entry. */
  inline?: Buffer;
}

/** How the manifest names a run: [from_seq, to_seq, entries, blocks]. */
export type RunMeta = [number, number, number, number];

interface Run {
  from_seq: number;
  to_seq: number;
  count: number;
  blocks: number;
  file: string;
  fences: Uint32Array;
  filter: IdFilter;
}

/** Beside each run, its fences (little-endian u32): derived data, read at open instead of the run. */
const FENCE_SUFFIX = '.fence';
/** Beside each run, its membership filter: derived data too, built again from its run when missing or damaged. */
const FILTER_SUFFIX = '.bloom';
const DERIVED = [FENCE_SUFFIX, FILTER_SUFFIX];
const runName = (from_seq: number, to_seq: number) => `${from_seq}-${to_seq}.run`;

const entryBytes = (place: IdPlace) => ENTRY_HEAD + (place.inline?.length ?? 0);

/** Every entry of the blocks in `bytes` (whole blocks), in order; with `only`, those of that hash. */
function decodeBlocks(bytes: Buffer, each: (place: IdPlace) => void, only?: number): void {
  for (let block = 0; block < bytes.length; block += ID_BLOCK_BYTES) {
    const count = bytes.readUInt32LE(block);
    let at = block + BLOCK_HEADER;
    for (let i = 0; i < count; i++) {
      if (only !== undefined && bytes.readUInt32LE(at) !== only) {
        at += ENTRY_HEAD + bytes.readUInt32LE(at + 40);
        continue;
      }
      const place: IdPlace = {
        hash: bytes.readUInt32LE(at),
        op: bytes.readUInt32LE(at + 4),
        seq: bytes.readDoubleLE(at + 8),
        segment: bytes.readDoubleLE(at + 16),
        offset: bytes.readDoubleLE(at + 24),
        length: bytes.readDoubleLE(at + 32),
      };
      const inline = bytes.readUInt32LE(at + 40);
      at += ENTRY_HEAD;
      if (inline > 0) {
        place.inline = bytes.subarray(at, at + inline);
        at += inline;
      }
      each(place);
    }
  }
}

/**
 * Writes entries (added in order) as a run's blocks, in batches of CHUNK_BLOCKS, and gathers
 * what is derived from them: the first hash of each block (the fences) and the filter.
 */
class RunWriter {
  private block = Buffer.alloc(ID_BLOCK_BYTES);
  private used = BLOCK_HEADER;
  private in_block = 0;
  private full: Buffer[] = [];
  private readonly fences: number[] = [];
  readonly filter: IdFilter;

  constructor(
    private readonly fd: number,
    entries: number,
  ) {
    this.filter = IdFilter.sized(entries);
  }

  add(place: IdPlace): void {
    const size = entryBytes(place);
    if (this.used + size > ID_BLOCK_BYTES) this.endBlock();
    if (this.in_block === 0) this.fences.push(place.hash);
    const b = this.block;
    const at = this.used;
    b.writeUInt32LE(place.hash, at);
    b.writeUInt32LE(place.op, at + 4);
    b.writeDoubleLE(place.seq, at + 8);
    b.writeDoubleLE(place.segment, at + 16);
    b.writeDoubleLE(place.offset, at + 24);
    b.writeDoubleLE(place.length, at + 32);
    b.writeUInt32LE(place.inline?.length ?? 0, at + 40);
    if (place.inline) place.inline.copy(b, at + ENTRY_HEAD);
    this.used += size;
    this.in_block++;
    this.filter.add(place.hash);
  }

  private endBlock(): void {
    if (this.in_block === 0) return;
    this.block.writeUInt32LE(this.in_block, 0);
    this.full.push(this.block);
    this.block = Buffer.alloc(ID_BLOCK_BYTES);
    this.used = BLOCK_HEADER;
    this.in_block = 0;
    if (this.full.length >= CHUNK_BLOCKS) this.writeFull();
  }

  private writeFull(): void {
    if (this.full.length > 0) writeFully(this.fd, Buffer.concat(this.full));
    this.full = [];
  }

  /** Writes the last block and fsyncs the run; its block count and fences. */
  finish(): { blocks: number; fences: Uint32Array } {
    this.endBlock();
    this.writeFull();
    fsyncSync(this.fd);
    return { blocks: this.fences.length, fences: Uint32Array.from(this.fences) };
  }
}

const byHashThenSeq = (a: IdPlace, b: IdPlace) => a.hash - b.hash || a.seq - b.seq;

function readFully(fd: number, bytes: Buffer, position: number, file: string): void {
  let done = 0;
  while (done < bytes.length) {
    const n = readSync(fd, bytes, done, bytes.length - done, position + done);
    if (n === 0) throw new CorruptStoreError(`id index ${file} is shorter than its manifest says`);
    done += n;
  }
}

function writeFully(fd: number, bytes: Buffer): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
}

/** Runs `write` for the run `file`; if it throws, the run and its derived files are removed first. */
function removedOnFailure<T>(file: string, write: () => T): T {
  try {
    return write();
  } catch (error) {
    removeRun(file);
    throw error;
  }
}

/** writeDerived, then the run's directory fsynced; if either fails, the run is removed with them. */
function writeDerivedOf(file: string, fences: Uint32Array, filter: IdFilter): void {
  removedOnFailure(file, () => {
    writeDerived(file, fences, filter);
    fsyncDirectory(join(file, '..'));
  });
}

/** Closes a run being written and removes it (a write cut short). */
function abandonRun(fd: number, file: string): void {
  closeSync(fd);
  removeRun(file);
}

/** Removes a run and its derived files. */
export function removeRun(file: string): void {
  rmSync(file, { force: true });
  for (const suffix of DERIVED) rmSync(`${file}${suffix}`, { force: true });
}

/**
 * The fences and the filter beside a run, fsynced before the directory (and so before a
 * manifest names the run); a missing or short file is still derived again from its run.
 */
function writeDerived(file: string, fences: Uint32Array, filter: IdFilter): void {
  const fd = openSync(`${file}${FENCE_SUFFIX}`, 'w', PRIVATE_FILE_MODE);
  try {
    writeFully(fd, Buffer.from(fences.buffer, fences.byteOffset, fences.byteLength));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  filter.write(`${file}${FILTER_SUFFIX}`);
}

/** First index whose value is >= (or, with `after`, >) `hash`. */
function bound(values: Uint32Array, hash: number, after: boolean): number {
  let low = 0;
  let high = values.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (values[mid]! < hash || (after && values[mid] === hash)) low = mid + 1;
    else high = mid;
  }
  return low;
}

export class IdRuns {
  private runs: Run[] = [];
  private memtable: IdPlace[] = [];
  /** Bytes of rows the memtable holds beside its entries. */
  private memtable_bytes = 0;
  private readonly by_hash = new Map<number, number[]>();
  /** Runs merged away: removed once a manifest without them is durable. */
  private retired: string[] = [];
  private readonly fds = new Map<string, number>();
  private readonly dir: string;

  private readonly max_memtable: number;
  /** Blocks read from runs by lookups so far (tests assert on it: about one per lookup, whatever the runs). */
  blocks_read = 0;

  constructor(index_dir: string, options: { max_memtable?: number } = {}) {
    this.dir = join(index_dir, ID_RUN_DIR);
    this.max_memtable = options.max_memtable ?? MAX_MEMTABLE;
  }

  /**
   * Opens the runs a manifest names. A run shorter than it says (only damage does that: runs
   * are fsynced before a manifest names them) is dropped, and its range of records is
   * returned to be indexed again from the journal; files no manifest names are removed.
   */
  open(metas: readonly RunMeta[], read_only: boolean): Array<[number, number]> {
    const damaged: Array<[number, number]> = [];
    const known = new Set<string>();
    for (const [from_seq, to_seq, count, blocks] of metas) {
      const file = join(this.dir, runName(from_seq, to_seq));
      const size = existsSync(file) ? statSync(file).size : -1;
      if (size < blocks * ID_BLOCK_BYTES) {
        damaged.push([from_seq, to_seq]);
        continue;
      }
      known.add(file);
      this.runs.push({
        from_seq,
        to_seq,
        count,
        blocks,
        file,
        fences: this.readFences(file, blocks),
        filter: this.readFilter(file, count, blocks, read_only),
      });
    }
    if (!read_only && existsSync(this.dir)) {
      for (const name of readdirSync(this.dir)) {
        const suffix = DERIVED.find((s) => name.endsWith(s));
        const run = join(this.dir, suffix ? name.slice(0, -suffix.length) : name);
        if (!known.has(run)) rmSync(join(this.dir, name), { force: true });
      }
    }
    return damaged;
  }

  /** The run's fences from its `.fence` file (written beside it), or from the run itself (each block's first hash) when that file is missing or short. */
  private readFences(file: string, blocks: number): Uint32Array {
    const fences = new Uint32Array(blocks);
    const fence_file = `${file}${FENCE_SUFFIX}`;
    if (existsSync(fence_file) && statSync(fence_file).size === fences.byteLength) {
      const fd = openSync(fence_file, 'r');
      try {
        readFully(
          fd,
          Buffer.from(fences.buffer, fences.byteOffset, fences.byteLength),
          0,
          fence_file,
        );
      } finally {
        closeSync(fd);
      }
      return fences;
    }
    const fd = openSync(file, 'r');
    try {
      const one = Buffer.alloc(4);
      for (let k = 0; k < blocks; k++) {
        readFully(fd, one, k * ID_BLOCK_BYTES + BLOCK_HEADER, file);
        fences[k] = one.readUInt32LE(0);
      }
    } finally {
      closeSync(fd);
    }
    return fences;
  }

  /**
   * The run's filter from its `.bloom` file, or built again from the run itself (and written
   * back, unless read-only) when that file is missing, short or fails its checksum: a read of
   * this one run, in chunks, never of the journal.
   */
  private readFilter(file: string, count: number, blocks: number, read_only: boolean): IdFilter {
    const stored = IdFilter.read(`${file}${FILTER_SUFFIX}`, count);
    if (stored) return stored;
    const filter = IdFilter.sized(count);
    const fd = openSync(file, 'r');
    try {
      for (let next = 0; next < blocks; next += CHUNK_BLOCKS) {
        const bytes = Buffer.alloc(Math.min(CHUNK_BLOCKS, blocks - next) * ID_BLOCK_BYTES);
        readFully(fd, bytes, next * ID_BLOCK_BYTES, file);
        decodeBlocks(bytes, (place) => filter.add(place.hash));
      }
    } finally {
      closeSync(fd);
    }
    if (!read_only) filter.write(`${file}${FILTER_SUFFIX}`);
    return filter;
  }

  /** Adds an entry; `place.inline`, if any, is the final row to keep beside it (at most ID_INLINE_MAX bytes). */
  add(place: IdPlace): void {
    let positions = this.by_hash.get(place.hash);
    if (!positions) this.by_hash.set(place.hash, (positions = []));
    positions.push(this.memtable.length);
    this.memtable.push(place);
    this.memtable_bytes += place.inline?.length ?? 0;
    if (
      (this.memtable.length >= this.max_memtable || this.memtable_bytes >= MAX_MEMTABLE_BYTES) &&
      this.memtable.length >= this.flush_again_at
    ) {
      // The memory bound, while records are indexed (a journal group is being placed): a
      // disk without room for the run leaves the entries in memory, tried again a quarter
      // further on or at the next manifest, rather than stop the journal.
      try {
        this.flush();
        this.flush_again_at = 0;
      } catch (error) {
        if (!isNoSpace(error)) throw error;
        this.flush_again_at = this.memtable.length + Math.ceil(this.max_memtable / 4);
      }
    }
  }

  /** After a flush found no room: the memtable length at which the bound tries again. */
  private flush_again_at = 0;

  /**
   * Every entry with this hash, newest first (the caller tells a colliding id apart by the
   * row beside the entry, or by reading its record). Runs are visited newest first; `visit`
   * returns false to stop.
   */
  find(hash: number, visit: (place: IdPlace) => boolean): void {
    const positions = this.by_hash.get(hash);
    if (positions)
      for (let i = positions.length - 1; i >= 0; i--)
        if (!visit(this.memtable[positions[i]!]!)) return;
    for (let r = this.runs.length - 1; r >= 0; r--) {
      const run = this.runs[r]!;
      if (!run.filter.mayHold(hash)) continue;
      this.blocks_read++;
      // The blocks whose first hash is below this one (the last of them) through those that
      // begin with it (entries of one hash may go on into the next block): one, but for
      // colliding hashes.
      const first_block = Math.max(0, bound(run.fences, hash, false) - 1);
      const end_block = Math.max(bound(run.fences, hash, true), first_block + 1);
      const bytes = Buffer.alloc((end_block - first_block) * ID_BLOCK_BYTES);
      readFully(this.fd(run.file), bytes, first_block * ID_BLOCK_BYTES, run.file);
      const matches: IdPlace[] = [];
      decodeBlocks(bytes, (place) => matches.push(place), hash);
      for (let i = matches.length - 1; i >= 0; i--) if (!visit(matches[i]!)) return;
    }
  }

  private fd(file: string): number {
    let fd = this.fds.get(file);
    if (fd === undefined) this.fds.set(file, (fd = openSync(file, 'r')));
    return fd;
  }

  /** Writes the memtable as one run, sorted, fsynced (file and directory). */
  flush(): void {
    if (this.memtable.length === 0) return;
    const sorted = [...this.memtable].sort(byHashThenSeq);
    const from_seq = this.memtable[0]!.seq;
    const to_seq = this.memtable.at(-1)!.seq;
    mkdirPrivate(this.dir);
    const file = join(this.dir, runName(from_seq, to_seq));
    const fd = openSync(file, 'w', PRIVATE_FILE_MODE);
    let written: { blocks: number; fences: Uint32Array };
    let filter: IdFilter;
    try {
      const writer = new RunWriter(fd, sorted.length);
      for (const place of sorted) writer.add(place);
      written = writer.finish();
      filter = writer.filter;
    } catch (error) {
      abandonRun(fd, file); // cut short (a full disk): the memtable stays, the next flush writes it again
      throw error;
    }
    closeSync(fd);
    writeDerivedOf(file, written.fences, filter);
    this.runs.push({ from_seq, to_seq, count: sorted.length, ...written, file, filter });
    this.memtable = [];
    this.memtable_bytes = 0;
    this.by_hash.clear();
  }

  /** Merges the newest runs while the newer is at least half the older (between manifests: the next one names the result). */
  async compact(): Promise<void> {
    while (this.runs.length >= 2 && this.runs.at(-1)!.count * 2 >= this.runs.at(-2)!.count)
      await this.mergeNewestTwo();
  }

  /** The runs for a manifest: [from_seq, to_seq, entries, blocks] each. */
  metas(): RunMeta[] {
    return this.runs.map((run) => [run.from_seq, run.to_seq, run.count, run.blocks]);
  }

  /** Runs merged away so far: the caller removes them (removeRun) once a manifest without them is durable. */
  takeRetired(): string[] {
    const retired = this.retired;
    this.retired = [];
    return retired;
  }

  private async mergeNewestTwo(): Promise<void> {
    const newer = this.runs.at(-1)!;
    const older = this.runs.at(-2)!;
    const file = join(this.dir, runName(older.from_seq, newer.to_seq));
    const count = older.count + newer.count;
    const out = openSync(file, 'w', PRIVATE_FILE_MODE);
    let written: { blocks: number; fences: Uint32Array };
    let filter: IdFilter;
    try {
      const writer = new RunWriter(out, count);
      const sources = [older, newer].map((run) => ({
        run,
        next_block: 0,
        chunk: [] as IdPlace[],
        at: 0,
      }));
      const refill = (source: (typeof sources)[number]) => {
        if (source.at < source.chunk.length || source.next_block >= source.run.blocks) return;
        const n = Math.min(CHUNK_BLOCKS, source.run.blocks - source.next_block);
        const bytes = Buffer.alloc(n * ID_BLOCK_BYTES);
        readFully(
          this.fd(source.run.file),
          bytes,
          source.next_block * ID_BLOCK_BYTES,
          source.run.file,
        );
        const chunk: IdPlace[] = [];
        decodeBlocks(bytes, (place) => chunk.push(place));
        source.chunk = chunk;
        source.at = 0;
        source.next_block += n;
      };
      for (let merged = 0; merged < count;) {
        for (let step = 0; step < MERGE_CHUNK && merged < count; step++, merged++) {
          for (const source of sources) refill(source);
          const [s0, s1] = sources as [(typeof sources)[number], (typeof sources)[number]];
          const a = s0.at < s0.chunk.length ? s0.chunk[s0.at]! : null;
          const b = s1.at < s1.chunk.length ? s1.chunk[s1.at]! : null;
          if (a === null && b === null)
            throw new CorruptStoreError(
              `id runs ${older.file} and ${newer.file} hold fewer entries than their manifest says`,
            );
          const take = b === null || (a !== null && byHashThenSeq(a, b) <= 0) ? s0 : s1;
          writer.add(take.chunk[take.at++]!);
        }
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      written = writer.finish();
      filter = writer.filter;
    } catch (error) {
      abandonRun(out, file); // cut short (a full disk): the two runs stay as they are
      throw error;
    }
    closeSync(out);
    writeDerivedOf(file, written.fences, filter);
    // By identity, not by place: a run the memtable became while this merge ran is after them now.
    this.runs.splice(this.runs.indexOf(older), 2, {
      from_seq: older.from_seq,
      to_seq: newer.to_seq,
      count,
      ...written,
      file,
      filter,
    });
    for (const run of [older, newer]) {
      const fd = this.fds.get(run.file);
      if (fd !== undefined) closeSync(fd);
      this.fds.delete(run.file);
      this.retired.push(run.file);
    }
  }

  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }
}
