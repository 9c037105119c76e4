// Append-only JSON Lines journal in segments. Commits that arrive while an fsync is in
// flight share the next one (group commit), so one fsync serves many requests.
import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { JournalRecord } from './state.js';
import { PRIVATE_FILE_MODE } from './private-files.js';
import { fsyncDirectory, isNoSpace } from './fs-durable.js';

/** For archive.ts, which reads the journal's segments and writes beside them. */
export { isNoSpace };

export class CorruptStoreError extends Error {
  override name = 'CorruptStoreError';
}

const SEGMENT_PATTERN = /^(\d{12})\.jsonl$/;

export function segmentName(first_seq: number): string {
  return `${String(first_seq).padStart(12, '0')}.jsonl`;
}

/** Segments in order, each with the sequence number of its first record. */
export function listSegments(journal_dir: string): Array<{ file: string; first_seq: number }> {
  let names: string[];
  try {
    names = readdirSync(journal_dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names
    .map((name) => ({ name, match: SEGMENT_PATTERN.exec(name) }))
    .filter((entry) => entry.match)
    .map((entry) => ({ file: join(journal_dir, entry.name), first_seq: Number(entry.match![1]) }))
    .sort((a, b) => a.first_seq - b.first_seq);
}

export interface ReadOptions {
  /** Drop (and, when `repair`, truncate away) a torn final line of the last segment. */
  repair: boolean;
  onTornLine?: (file: string, line: number, bytes: number) => void;
}

/** Where a record's line lies: its segment (by first sequence number), byte offset and length (without the newline). */
export interface RecordPlace {
  segment: number;
  offset: number;
  length: number;
}

/**
 * Reads every record with seq > after_seq, in order, checking that sequence numbers are
 * consecutive. A line that does not parse is corruption, except the very last line of the
 * last segment: a crash mid-append leaves that one, and it was never acknowledged.
 * `up_to_seq` stops the read there (a reader beside a running writer stops at what it loaded).
 */
export function* readJournal(
  journal_dir: string,
  after_seq: number,
  options: ReadOptions & { up_to_seq?: number },
): Generator<JournalRecord> {
  for (const { record } of readJournalPlaced(journal_dir, after_seq, options)) yield record;
}

/** readJournal, with each record's place in its segment (the history indexes point there). */
export function* readJournalPlaced(
  journal_dir: string,
  after_seq: number,
  options: ReadOptions & { up_to_seq?: number },
): Generator<{ record: JournalRecord; place: RecordPlace }> {
  const segments = listSegments(journal_dir);
  const up_to_seq = options.up_to_seq ?? Number.MAX_SAFE_INTEGER;
  let expected = after_seq + 1;
  let start = 0;
  for (let i = 0; i < segments.length; i++) if (segments[i]!.first_seq <= expected) start = i;
  for (let i = start; i < segments.length; i++) {
    const { file, first_seq } = segments[i]!;
    if (first_seq > up_to_seq) return;
    const is_last_segment = i === segments.length - 1;
    // The segment holding after_seq is read from a line at or before it, found by bisection.
    const skip = i === start && first_seq <= after_seq ? seekLine(file, after_seq) : 0;
    const content = skip === 0 ? readFileSync(file) : readFrom(file, skip);
    let [offset, line_number] = [0, 0];
    while (offset < content.length) {
      const newline = content.indexOf(10, offset);
      const end = newline === -1 ? content.length : newline;
      line_number++;
      let record: JournalRecord | undefined;
      // A complete line before the wanted records is skipped by its head (`{"s":N,`), unparsed.
      const head =
        newline === -1
          ? null
          : /^\{"s":(\d+),/.exec(
              content.subarray(offset, Math.min(end, offset + 32)).toString('latin1'),
            );
      if (head && Number(head[1]) <= after_seq) {
        offset = end + 1;
        continue;
      }
      try {
        record = JSON.parse(content.subarray(offset, end).toString('utf8')) as JournalRecord;
      } catch {
        record = undefined;
      }
      const complete =
        newline !== -1 &&
        record !== undefined &&
        typeof record.s === 'number' &&
        Array.isArray(record.ops);
      if (!complete) {
        const rest_is_tail = is_last_segment && (newline === -1 || isBlank(content, newline + 1));
        // Beside a running writer (up_to_seq given), the last segment's last line may be
        // being appended right now: the read ends there.
        if (!rest_is_tail && !(is_last_segment && options.up_to_seq !== undefined)) {
          throw new CorruptStoreError(
            `journal ${file} ${lineName(line_number, skip)}: not a valid record; refusing to start (restore the file or remove the damage by hand)`,
          );
        }
        if (options.up_to_seq === undefined) {
          options.onTornLine?.(file, line_number, content.length - offset);
          if (options.repair) truncateSync(file, skip + offset);
        }
        return;
      }
      if (record!.s > up_to_seq) return;
      if (record!.s > after_seq) {
        if (record!.s !== expected) {
          throw new CorruptStoreError(
            `journal ${file} ${lineName(line_number, skip)}: sequence ${record!.s} where ${expected} was expected`,
          );
        }
        expected++;
        const place = { segment: first_seq, offset: skip + offset, length: end - offset };
        yield { record: record!, place };
      }
      offset = end + 1;
    }
  }
}

/** A line's name in messages: its number in the segment, or after the byte a read began at. */
const lineName = (line: number, skip: number) =>
  skip === 0 ? `line ${line}` : `line ${line} after byte ${skip}`;

/** Segments smaller than this are read whole (bisecting them saves nothing). */
const SEEK_MIN_BYTES = 1 << 20;
const SEEK_CHUNK = 64 * 1024;

/**
 * A byte offset in a segment where a line begins whose record is at most `after_seq`, as late
 * as bisection on the lines' heads (`{"s":N,`) finds one, or 0: reading from there misses no
 * record after `after_seq`, since records are in order. A line is found by the byte after a
 * newline (JSON text holds no raw newline byte, and UTF-8 never has 0x0A inside a character);
 * a head that does not parse (a torn tail) only moves the search back.
 */
function seekLine(file: string, after_seq: number): number {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size < SEEK_MIN_BYTES) return 0;
    const chunk = Buffer.alloc(SEEK_CHUNK);
    const head = Buffer.alloc(32);
    /** The first line beginning after byte `from` and before `limit`, with its record's sequence number. */
    const lineAfter = (from: number, limit: number): { at: number; seq: number } | null => {
      for (let pos = from; pos < limit;) {
        const read = readSync(fd, chunk, 0, chunk.length, pos);
        if (read <= 0) return null;
        const newline = chunk.subarray(0, read).indexOf(10);
        if (newline === -1) {
          pos += read;
          continue;
        }
        const at = pos + newline + 1;
        if (at >= limit) return null;
        const got = readSync(fd, head, 0, head.length, at);
        const match = /^\{"s":(\d+),/.exec(head.subarray(0, got).toString('latin1'));
        return match ? { at, seq: Number(match[1]) } : null;
      }
      return null;
    };
    let found = 0;
    let low = 0;
    let high = size;
    while (high - low > SEEK_CHUNK) {
      const line = lineAfter(Math.floor((low + high) / 2), high);
      if (line && line.seq <= after_seq) found = low = line.at;
      else high = Math.floor((low + high) / 2);
    }
    return found;
  } finally {
    closeSync(fd);
  }
}

/** The bytes of `file` from `from` to its end. */
function readFrom(file: string, from: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const bytes = Buffer.alloc(Math.max(0, fstatSync(fd).size - from));
    for (let at = 0; at < bytes.length;) {
      const read = readSync(fd, bytes, at, bytes.length - at, from + at);
      if (read <= 0) return bytes.subarray(0, at);
      at += read;
    }
    return bytes;
  } finally {
    closeSync(fd);
  }
}

/** True when the bytes from `from` on are only zeros or white space (a torn tail). */
function isBlank(content: Buffer, from: number): boolean {
  for (let i = from; i < content.length; i++) {
    const byte = content[i];
    if (byte !== 0 && byte !== 10 && byte !== 32) return false;
  }
  return true;
}

interface Waiter {
  resolve: () => void;
  reject: (error: Error) => void;
}

interface SeqWaiter extends Waiter {
  seq: number;
}

export interface JournalWriterOptions {
  segment_bytes: number;
  /** Called after each durable group with the sequence number now durable. */
  onDurable?: (durable_seq: number) => void;
  /**
   * Called once a group is written, while its fdatasync is in flight (and so before anyone
   * waiting on it is told): where its lines, records first_seq, first_seq + 1, ..., lie in
   * `segment` (the history indexes are kept up here, on the main thread's time that the
   * disk wait leaves idle, not after it). Line i begins at byte starts[i] and ends before the
   * newline at starts[i + 1] - 1; `starts` is reused by the next group (numbers, not an object
   * per line: this runs per commit). A line placed is in the file (the page cache), not yet
   * necessarily on the disk: what names it on disk (the index manifest) waits for
   * `waitDurable` first.
   */
  onPlaced?: (first_seq: number, segment: number, starts: readonly number[]) => void;
  /** A failed write or fsync leaves memory ahead of disk; the store must stop. */
  onFatal: (error: Error) => void;
  /**
   * The disk had no room for a group (ENOSPC, EDQUOT; nothing of it is left in the file):
   * called to free room kept for the journal. True when it freed some: the group is written
   * again, once.
   */
  onNoSpace?: (error: Error) => boolean;
  /**
   * Still no room: every record after `durable_seq` (the group, and those appended since) is
   * refused. Called before their writers are told, with the error they get back: the caller
   * undoes them, so that memory is as the disk is. Without it, no room is fatal (onFatal).
   */
  onRefused?: (durable_seq: number, error: Error) => Error;
  /**
   * false: a group counts as done once written, without fdatasync; a segment is fdatasynced
   * only when it is full (rotation) and at close, so a journal closed cleanly is whole on
   * disk. Only for a journal that is not the record of anything: a PostgreSQL replica's,
   * whose database holds every record (default true).
   */
  sync?: boolean;
}

export class JournalWriter {
  private pending: string[] = [];
  private waiters: Waiter[] = [];
  private seq_waiters: SeqWaiter[] = [];
  private flushing: Promise<void> | null = null;
  private quiet = true;
  private failed: Error | null = null;
  private appended_seq: number;
  private durable_seq: number;
  private segment_first_seq: number;
  /** Where each line of the group just written begins (see JournalWriterOptions.onPlaced). */
  private readonly starts: number[] = [];
  /** Number of fsync groups written: the group-commit tests read it. */
  groups = 0;

  private constructor(
    private readonly journal_dir: string,
    private handle: FileHandle,
    private segment_size: number,
    segment_first_seq: number,
    last_seq: number,
    private readonly options: JournalWriterOptions,
  ) {
    this.appended_seq = last_seq;
    this.durable_seq = last_seq;
    this.segment_first_seq = segment_first_seq;
  }

  static async open(
    journal_dir: string,
    last_seq: number,
    options: JournalWriterOptions,
  ): Promise<JournalWriter> {
    const segments = listSegments(journal_dir);
    const last = segments.at(-1);
    const file = last ? last.file : join(journal_dir, segmentName(last_seq + 1));
    const handle = await open(file, 'a', PRIVATE_FILE_MODE);
    if (!last) fsyncDirectory(journal_dir);
    const { size } = await handle.stat();
    return new JournalWriter(
      journal_dir,
      handle,
      size,
      last ? last.first_seq : last_seq + 1,
      last_seq,
      options,
    );
  }

  /** Queues the record line with sequence number `seq` (the next one); resolves once it is on disk. */
  append(line: string, seq: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (seq !== this.appended_seq + 1)
      throw new Error(`invariant: journal record ${seq} appended after ${this.appended_seq}`);
    this.appended_seq = seq;
    this.pending.push(line);
    const promise = new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    this.flushing ??= this.flushLoop();
    return promise;
  }

  /** Resolves once every record up to `seq` is durable (at once if it is already). */
  waitDurable(seq: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (seq <= this.durable_seq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.seq_waiters.push({ seq, resolve, reject }));
  }

  /** Resolves when everything appended so far is durable. */
  drain(): Promise<void> {
    return this.waitDurable(this.appended_seq);
  }

  private async flushLoop(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const lines = this.pending;
        const waiters = this.waiters;
        const first_seq = this.durable_seq + 1;
        const last_seq = this.appended_seq;
        this.pending = [];
        this.waiters = [];
        const buffer = Buffer.from(lines.join(''), 'utf8');
        try {
          const lines_at = await this.writeMakingRoom(buffer, first_seq);
          if (lines_at === null) {
            this.refuse(waiters);
            continue;
          }
          const fd = this.handle.fd;
          // The thread pool's fdatasync is started first, then the lines are placed (indexed)
          // while it runs: the indexing no longer adds to each group's cycle.
          const synced =
            this.options.sync === false || (lines.length === 1 && this.quiet)
              ? null
              : new Promise<void>((resolve, reject) =>
                  fdatasync(fd, (error) => (error ? reject(error) : resolve())),
                );
          if (this.options.onPlaced)
            try {
              this.place(lines, buffer.length, lines_at, first_seq);
            } catch (error) {
              void synced?.catch(() => {}); // the store stops on `error`; the sync's own fate is moot
              throw error;
            }
          // A lone commit on a quiet journal syncs right here: handing it to the thread pool
          // and being woken after costs more than the wait (docs/ARCHITECTURE.md#the-store has
          // the figures), and there is no one to let run meanwhile. Under load the groups
          // grow, and the fdatasync goes to the thread pool while the event loop works.
          if (synced) await synced;
          else if (this.options.sync !== false) fdatasyncSync(fd);
          // (sync false: a replica's journal, written is enough; see JournalWriterOptions.sync)
        } catch (error) {
          this.failed = error as Error;
          for (const waiter of [...waiters, ...this.waiters, ...this.seq_waiters])
            waiter.reject(this.failed);
          this.waiters = [];
          this.seq_waiters = [];
          this.pending = [];
          this.options.onFatal(this.failed);
          return;
        }
        this.durable_seq = last_seq;
        this.groups++;
        for (const waiter of waiters) waiter.resolve();
        if (this.seq_waiters.length > 0) {
          const still: SeqWaiter[] = [];
          for (const waiter of this.seq_waiters)
            waiter.seq <= last_seq ? waiter.resolve() : still.push(waiter);
          this.seq_waiters = still;
        }
        this.options.onDurable?.(last_seq);
        // Let the writers just acknowledged (and requests that arrived meanwhile) queue
        // their next commits, so they share the next fsync instead of splitting into two groups.
        await new Promise<void>((resolve) => setImmediate(resolve));
        // Quiet: nothing arrived during this group's sync and the yield after it.
        this.quiet = this.pending.length === 0;
      }
    } finally {
      this.flushing = null;
    }
  }

  /** Tells onPlaced where a group's lines, written from byte `at` of the segment on, lie. */
  private place(lines: readonly string[], bytes: number, at: number, first_seq: number): void {
    const starts = this.starts;
    starts.length = lines.length + 1;
    let offset = at;
    let chars = 0;
    for (let i = 0; i < lines.length; i++) chars += lines[i]!.length;
    // As many bytes as characters: every line is ASCII, a line's bytes are its length
    // (Buffer.byteLength is a native call per line, a third of this loop's cost).
    const ascii = chars === bytes;
    for (let i = 0; i < lines.length; i++) {
      starts[i] = offset;
      offset += ascii ? lines[i]!.length : Buffer.byteLength(lines[i]!, 'utf8');
    }
    starts[lines.length] = offset;
    this.options.onPlaced!(first_seq, this.segment_first_seq, starts);
  }

  /**
   * Writes a group at the segment's end (rotating first when it would pass segment_bytes),
   * and returns where it begins. A disk without room (ENOSPC) leaves nothing of the group in
   * the file; the room kept for the journal is freed (onNoSpace) and the group written again,
   * once. Still no room: null, when the caller refuses the records (onRefused).
   */
  private async writeMakingRoom(buffer: Buffer, first_seq: number): Promise<number | null> {
    try {
      return await this.writeGroup(buffer, first_seq);
    } catch (error) {
      if (!isNoSpace(error) || !this.options.onRefused) throw error;
      if (this.options.onNoSpace?.(error as Error)) {
        try {
          return await this.writeGroup(buffer, first_seq);
        } catch (again) {
          if (!isNoSpace(again)) throw again;
        }
      }
      this.no_space = error as Error;
      return null;
    }
  }

  /** The last no-room error, for the refusal. */
  private no_space: Error | null = null;

  private async writeGroup(buffer: Buffer, first_seq: number): Promise<number> {
    if (this.segment_size > 0 && this.segment_size + buffer.length > this.options.segment_bytes)
      await this.rotate(first_seq);
    // Copying a group into the page cache takes microseconds, so it is done here; only
    // the fdatasync, the part that waits for the disk, goes to the thread pool.
    const at = this.segment_size;
    let written = 0;
    try {
      while (written < buffer.length)
        written += writeSync(this.handle.fd, buffer, written, buffer.length - written);
    } catch (error) {
      // A part of the group may be in the file: cut it off, so that the file ends on a line.
      ftruncateSync(this.handle.fd, at);
      throw error;
    }
    this.segment_size += buffer.length;
    return at;
  }

  /** Refuses every record after the durable ones: the store undoes them, then their writers hear why. */
  private refuse(group: Waiter[]): void {
    const error = this.options.onRefused!(this.durable_seq, this.no_space!);
    this.appended_seq = this.durable_seq;
    for (const waiter of [...group, ...this.waiters, ...this.seq_waiters]) waiter.reject(error);
    this.waiters = [];
    this.seq_waiters = [];
    this.pending = [];
  }

  private async rotate(first_seq: number): Promise<void> {
    if (this.options.sync === false) await this.handle.datasync(); // one per segment (see sync)
    // The new segment is opened before the old one is closed: a disk without room for it
    // leaves the journal writing where it was.
    const next = await open(join(this.journal_dir, segmentName(first_seq)), 'a', PRIVATE_FILE_MODE);
    try {
      fsyncDirectory(this.journal_dir);
    } catch (error) {
      await next.close();
      rmSync(join(this.journal_dir, segmentName(first_seq)), { force: true }); // empty: never named
      throw error;
    }
    await this.handle.close();
    this.handle = next;
    this.segment_size = 0;
    this.segment_first_seq = first_seq;
  }

  async close(): Promise<void> {
    await this.drain();
    if (this.options.sync === false) await this.handle.datasync(); // closed cleanly: whole on disk
    await this.handle.close();
  }
}
