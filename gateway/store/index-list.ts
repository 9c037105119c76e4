// The history indexes' lists: fixed-size entries (ENTRY_BYTES) appended in journal order to
// one file per list (index/<kind>/<key>.idx), the newest of them in memory until a checkpoint
// writes them out, read by position (archive.ts keeps the lists and their manifest).
import { closeSync, fsyncSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { CorruptStoreError } from './journal.js';

const FIELDS = 9;
export const ENTRY_BYTES = FIELDS * 8;
/** Entries read per pread when walking a list. */
const CHUNK_ENTRIES = 512;
const MAX_OPEN_FILES = 64;

/**
 * One index entry: where the record is (seq, segment, offset, length) and what readers filter
 * and add up on without reading it. `ts_ms` never decreases along a list (a clock that steps
 * back is clamped), so a time range is a binary search.
 *   txn: tag = service and status code, aux = created_at (ms), aux2 = amount (micros)
 *   wal: tag = change of the wallet (micros), aux = balance after it, aux2 = 0
 *   use: tag = tier code, aux = cost (micros), aux2 = tokens
 *   log: tag = HTTP status, aux = method and service code, aux2 = latency (ms)
 *   aud, id: tag = a hash of the action or id
 */
export interface Entry {
  ts_ms: number;
  seq: number;
  segment: number;
  offset: number;
  length: number;
  tag: number;
  aux: number;
  aux2: number;
  /** The index of the op in its record's ops (a record may hold several rows or postings). */
  op: number;
}

/** The file name of a list's key (an account id, ALL...): the key itself when it is plain, else its hex. */
export function fileKey(key: string): string {
  return /^[A-Za-z0-9_-]{1,100}$/.test(key)
    ? key
    : `~${Buffer.from(key, 'utf8').toString('hex').slice(0, 200)}`;
}

/** Open files, few and reused: index lists and journal segments read by position. */
export class FileCache {
  private readonly fds = new Map<string, number>();
  get(file: string): number {
    let fd = this.fds.get(file);
    if (fd !== undefined) {
      this.fds.delete(file);
      this.fds.set(file, fd);
      return fd;
    }
    fd = openSync(file, 'r');
    this.fds.set(file, fd);
    if (this.fds.size > MAX_OPEN_FILES) {
      const [oldest, oldest_fd] = this.fds.entries().next().value as [string, number];
      this.fds.delete(oldest);
      closeSync(oldest_fd);
    }
    return fd;
  }
  forget(file: string): void {
    const fd = this.fds.get(file);
    if (fd !== undefined) closeSync(fd);
    this.fds.delete(file);
  }
  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }
}

const NO_ENTRIES = new Float64Array(0);

export class IndexList {
  /** Entries in the file. */
  disk = 0;
  /**
   * Entries taken at a checkpoint's cut and being written out (positions [disk, disk +
   * taken_length)): the writes run in slices between commits, so reads serve them from here
   * until they are in the file.
   */
  private taken: Float64Array | null = null;
  taken_length = 0;
  /** Entries not written out yet, packed FIELDS doubles each. */
  private tail = new Float64Array(FIELDS * 4);
  tail_length = 0;
  last_ts = -Infinity;
  last_aux = 0;
  /** txn lists: entries per tag code (a total by service and status without a walk). */
  tag_counts: number[] | null = null;
  constructor(
    readonly key: string,
    readonly file: string,
    private readonly files: FileCache,
    private readonly counters: ReadCounters,
  ) {}

  get count(): number {
    return this.disk + this.taken_length + this.tail_length;
  }

  /** @internal */ push(entry: Entry, ts_ms: number): void {
    if ((this.tail_length + 1) * FIELDS > this.tail.length) {
      const grown = new Float64Array(Math.max(FIELDS * 4, this.tail.length * 2));
      grown.set(this.tail);
      this.tail = grown;
    }
    const at = this.tail_length++ * FIELDS;
    const t = this.tail;
    t[at] = ts_ms;
    t[at + 1] = entry.seq;
    t[at + 2] = entry.segment;
    t[at + 3] = entry.offset;
    t[at + 4] = entry.length;
    t[at + 5] = entry.tag;
    t[at + 6] = entry.aux;
    t[at + 7] = entry.aux2;
    t[at + 8] = entry.op;
  }

  /** Moves the unwritten entries to `taken` (none may be taken already): they are written next. @internal */
  takeTail(): void {
    this.taken = this.tail;
    this.taken_length = this.tail_length;
    this.tail = NO_ENTRIES; // made at the next push: most lists take none before the next cut
    this.tail_length = 0;
  }

  /** The taken entries' bytes (a view), for `wroteTaken` once they are in the file. @internal */
  takenBytes(): Buffer {
    const taken = this.taken!;
    return Buffer.from(taken.buffer, taken.byteOffset, this.taken_length * ENTRY_BYTES);
  }

  /** @internal */ wroteTaken(): void {
    this.disk += this.taken_length;
    this.taken = null;
    this.taken_length = 0;
  }

  /** Entries [start, end) in list order. */
  read(start: number, end: number): Entry[] {
    const out: Entry[] = [];
    start = Math.max(0, start);
    end = Math.min(end, this.count);
    if (start >= end) return out;
    this.counters.entries += end - start;
    const disk_end = Math.min(end, this.disk);
    if (start < disk_end) {
      const bytes = Buffer.alloc((disk_end - start) * ENTRY_BYTES);
      const fd = this.files.get(this.file);
      let done = 0;
      while (done < bytes.length) {
        const n = readSync(fd, bytes, done, bytes.length - done, start * ENTRY_BYTES + done);
        if (n === 0)
          throw new CorruptStoreError(
            `index ${this.file} is shorter than its ${this.disk} entries`,
          );
        done += n;
      }
      for (let at = 0; at < bytes.length; at += ENTRY_BYTES) {
        out.push({
          ts_ms: bytes.readDoubleLE(at),
          seq: bytes.readDoubleLE(at + 8),
          segment: bytes.readDoubleLE(at + 16),
          offset: bytes.readDoubleLE(at + 24),
          length: bytes.readDoubleLE(at + 32),
          tag: bytes.readDoubleLE(at + 40),
          aux: bytes.readDoubleLE(at + 48),
          aux2: bytes.readDoubleLE(at + 56),
          op: bytes.readDoubleLE(at + 64),
        });
      }
    }
    const tail_from = this.disk + this.taken_length;
    if (this.taken)
      unpack(this.taken, this.disk, Math.max(start, this.disk), Math.min(end, tail_from), out);
    unpack(this.tail, tail_from, Math.max(start, tail_from), end, out);
    return out;
  }

  /** The first position whose ts_ms is >= ts_ms (binary search: a few preads). */
  lowerBound(ts_ms: number): number {
    let low = 0;
    let high = this.count;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.read(mid, mid + 1)[0]!.ts_ms < ts_ms) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** Walks [start, end) from the newest end backwards, a chunk per pread; `visit` returns false to stop. */
  walkBack(start: number, end: number, visit: (entry: Entry, position: number) => boolean): void {
    for (let high = end; high > start; high -= CHUNK_ENTRIES) {
      const low = Math.max(start, high - CHUNK_ENTRIES);
      const chunk = this.read(low, high);
      for (let i = chunk.length - 1; i >= 0; i--) if (!visit(chunk[i]!, low + i)) return;
    }
  }

  walk(start: number, end: number, visit: (entry: Entry, position: number) => boolean): void {
    for (let low = start; low < end; low += CHUNK_ENTRIES) {
      const chunk = this.read(low, Math.min(end, low + CHUNK_ENTRIES));
      for (let i = 0; i < chunk.length; i++) if (!visit(chunk[i]!, low + i)) return;
    }
  }
}

/** Appends entries [start, end) of a packed array whose first entry is at position `base`. */
function unpack(
  packed: Float64Array,
  base: number,
  start: number,
  end: number,
  out: Entry[],
): void {
  for (let i = start; i < end; i++) {
    const at = (i - base) * FIELDS;
    out.push({
      ts_ms: packed[at]!,
      seq: packed[at + 1]!,
      segment: packed[at + 2]!,
      offset: packed[at + 3]!,
      length: packed[at + 4]!,
      tag: packed[at + 5]!,
      aux: packed[at + 6]!,
      aux2: packed[at + 7]!,
      op: packed[at + 8]!,
    });
  }
}

export interface ReadCounters {
  /** Index entries read. */
  entries: number;
  /** History records (journal lines) read. */
  records: number;
  /** Final rows read from beside their id entries (no journal line). */
  inline_rows: number;
}

/** fsyncs files or directories on the thread pool, two at a time (the journal's fdatasync shares the pool). */
export async function fsyncAll(files: string[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const file = files[next++]!;
      let handle;
      try {
        handle = await open(file, 'r');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw error;
      }
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  };
  await Promise.all([worker(), worker()]);
}

export function truncateList(file: string, bytes: number): void {
  const fd = openSync(file, 'r+');
  try {
    ftruncateSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
