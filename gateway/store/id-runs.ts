// Finalized payment transactions by id, at a cost that does not grow with history: an
// LSM-like index of sorted immutable runs.
//
//   index/idrun/<from_seq>-<to_seq>.run         entries (ID_ENTRY_BYTES) sorted by (id hash, seq)
//   index/idrun/<from_seq>-<to_seq>.run.fence   one hash per FENCE_EVERY entries (derived)
//   index/idrun/<from_seq>-<to_seq>.run.bloom   the run's membership filter (derived)
//
// New entries wait in memory (the memtable) until the next manifest; then they are sorted
// and written as one run (fsynced before the manifest names it), and the newest runs are
// merged while the newer is at least half the older (a binary counter: at most log2 of
// history / run size runs). Every run keeps in memory the hash of one entry in FENCE_EVERY
// (its fences, 4 bytes per 32 transactions), so a lookup is, per run, a binary search in
// memory and one pread of one block of 32 entries (1.3 kB). Every run also keeps a membership
// filter of its hashes (id-filter.ts, 10 bits per entry), and a lookup reads a block only of
// the runs whose filter says the hash may be there: about one block per lookup (the run that
// holds the id, plus a false positive in fewer than 1 run in 100), however many runs there are.
// Runs cover disjoint, contiguous ranges of journal records; a merged run replaces its two
// in the next manifest, and they are removed only after that manifest is durable.
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
import { CorruptStoreError, fsyncDirectory } from './journal.js';
import { PRIVATE_FILE_MODE, mkdirPrivate } from './private-files.js';

export const ID_RUN_DIR = 'idrun';
/** hash u32, op u32, then seq, segment, offset and length as doubles. */
export const ID_ENTRY_BYTES = 40;
const FENCE_EVERY = 32;
/** Entries waiting in memory past this many are written as a run before the next manifest (bounded memory). */
const MAX_MEMTABLE = 262_144;
/** Entries per read and per write when runs are merged (the event loop runs between chunks). */
const MERGE_CHUNK = 16_384;

export interface IdPlace {
  hash: number;
  op: number;
  seq: number;
  segment: number;
  offset: number;
  length: number;
}

/** How the manifest names a run: [from_seq, to_seq, entries]. */
export type RunMeta = [number, number, number];

interface Run {
  from_seq: number;
  to_seq: number;
  count: number;
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

function encode(places: readonly IdPlace[]): Buffer {
  const bytes = Buffer.alloc(places.length * ID_ENTRY_BYTES);
  places.forEach((p, i) => {
    const at = i * ID_ENTRY_BYTES;
    bytes.writeUInt32LE(p.hash, at);
    bytes.writeUInt32LE(p.op, at + 4);
    bytes.writeDoubleLE(p.seq, at + 8);
    bytes.writeDoubleLE(p.segment, at + 16);
    bytes.writeDoubleLE(p.offset, at + 24);
    bytes.writeDoubleLE(p.length, at + 32);
  });
  return bytes;
}

function decode(bytes: Buffer, at: number): IdPlace {
  return {
    hash: bytes.readUInt32LE(at),
    op: bytes.readUInt32LE(at + 4),
    seq: bytes.readDoubleLE(at + 8),
    segment: bytes.readDoubleLE(at + 16),
    offset: bytes.readDoubleLE(at + 24),
    length: bytes.readDoubleLE(at + 32),
  };
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
    for (const [from_seq, to_seq, count] of metas) {
      const file = join(this.dir, runName(from_seq, to_seq));
      const size = existsSync(file) ? statSync(file).size : -1;
      if (size < count * ID_ENTRY_BYTES) {
        damaged.push([from_seq, to_seq]);
        continue;
      }
      known.add(file);
      this.runs.push({
        from_seq,
        to_seq,
        count,
        file,
        fences: this.readFences(file, count),
        filter: this.readFilter(file, count, read_only),
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

  /** The run's fences from its `.fence` file (written beside it), or from the run itself when that file is missing or short. */
  private readFences(file: string, count: number): Uint32Array {
    const fences = new Uint32Array(Math.ceil(count / FENCE_EVERY));
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
      for (let k = 0; k < fences.length; k++) {
        readFully(fd, one, k * FENCE_EVERY * ID_ENTRY_BYTES, file);
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
  private readFilter(file: string, count: number, read_only: boolean): IdFilter {
    const stored = IdFilter.read(`${file}${FILTER_SUFFIX}`, count);
    if (stored) return stored;
    const filter = IdFilter.sized(count);
    const fd = openSync(file, 'r');
    try {
      for (let next = 0; next < count; next += MERGE_CHUNK) {
        const n = Math.min(MERGE_CHUNK, count - next);
        const bytes = Buffer.alloc(n * ID_ENTRY_BYTES);
        readFully(fd, bytes, next * ID_ENTRY_BYTES, file);
        for (let at = 0; at < bytes.length; at += ID_ENTRY_BYTES)
          filter.add(bytes.readUInt32LE(at));
      }
    } finally {
      closeSync(fd);
    }
    if (!read_only) filter.write(`${file}${FILTER_SUFFIX}`);
    return filter;
  }

  add(place: IdPlace): void {
    let positions = this.by_hash.get(place.hash);
    if (!positions) this.by_hash.set(place.hash, (positions = []));
    positions.push(this.memtable.length);
    this.memtable.push(place);
    if (this.memtable.length >= this.max_memtable) this.flush();
  }

  /**
   * Every entry with this hash, newest first (the caller reads each record to tell a
   * colliding id apart). Runs are visited newest first; `visit` returns false to stop.
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
      const first_block = Math.max(0, bound(run.fences, hash, false) - 1);
      const end_block = bound(run.fences, hash, true);
      const start = first_block * FENCE_EVERY;
      const end = Math.min(run.count, Math.max(end_block, first_block + 1) * FENCE_EVERY);
      const bytes = Buffer.alloc((end - start) * ID_ENTRY_BYTES);
      readFully(this.fd(run.file), bytes, start * ID_ENTRY_BYTES, run.file);
      const matches: IdPlace[] = [];
      for (let at = 0; at < bytes.length; at += ID_ENTRY_BYTES)
        if (bytes.readUInt32LE(at) === hash) matches.push(decode(bytes, at));
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
    try {
      writeFully(fd, encode(sorted));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const fences = new Uint32Array(Math.ceil(sorted.length / FENCE_EVERY));
    for (let k = 0; k < fences.length; k++) fences[k] = sorted[k * FENCE_EVERY]!.hash;
    const filter = IdFilter.sized(sorted.length);
    for (const place of sorted) filter.add(place.hash);
    writeDerived(file, fences, filter);
    fsyncDirectory(this.dir);
    this.runs.push({ from_seq, to_seq, count: sorted.length, file, fences, filter });
    this.memtable = [];
    this.by_hash.clear();
  }

  /** Merges the newest runs while the newer is at least half the older (between manifests: the next one names the result). */
  async compact(): Promise<void> {
    while (this.runs.length >= 2 && this.runs.at(-1)!.count * 2 >= this.runs.at(-2)!.count)
      await this.mergeNewestTwo();
  }

  /** The runs for a manifest: [from_seq, to_seq, entries] each. */
  metas(): RunMeta[] {
    return this.runs.map((run) => [run.from_seq, run.to_seq, run.count]);
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
    const fences = new Uint32Array(Math.ceil(count / FENCE_EVERY));
    const filter = IdFilter.sized(count);
    const out = openSync(file, 'w', PRIVATE_FILE_MODE);
    try {
      const sources = [older, newer].map((run) => ({
        run,
        next: 0,
        chunk: [] as IdPlace[],
        at: 0,
      }));
      const refill = (source: (typeof sources)[number]) => {
        if (source.at < source.chunk.length || source.next >= source.run.count) return;
        const n = Math.min(MERGE_CHUNK, source.run.count - source.next);
        const bytes = Buffer.alloc(n * ID_ENTRY_BYTES);
        readFully(this.fd(source.run.file), bytes, source.next * ID_ENTRY_BYTES, source.run.file);
        source.chunk = Array.from({ length: n }, (_, i) => decode(bytes, i * ID_ENTRY_BYTES));
        source.at = 0;
        source.next += n;
      };
      let written = 0;
      while (written < count) {
        const batch: IdPlace[] = [];
        while (batch.length < MERGE_CHUNK && written + batch.length < count) {
          for (const source of sources) refill(source);
          const a =
            sources[0]!.at < sources[0]!.chunk.length ? sources[0]!.chunk[sources[0]!.at]! : null;
          const b =
            sources[1]!.at < sources[1]!.chunk.length ? sources[1]!.chunk[sources[1]!.at]! : null;
          const take =
            b === null || (a !== null && byHashThenSeq(a, b) <= 0) ? sources[0]! : sources[1]!;
          const place = take.chunk[take.at++]!;
          if ((written + batch.length) % FENCE_EVERY === 0)
            fences[(written + batch.length) / FENCE_EVERY] = place.hash;
          filter.add(place.hash);
          batch.push(place);
        }
        writeFully(out, encode(batch));
        written += batch.length;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      fsyncSync(out);
    } finally {
      closeSync(out);
    }
    writeDerived(file, fences, filter);
    fsyncDirectory(this.dir);
    // By identity, not by place: a run the memtable became while this merge ran is after them now.
    this.runs.splice(this.runs.indexOf(older), 2, {
      from_seq: older.from_seq,
      to_seq: newer.to_seq,
      count,
      file,
      fences,
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
