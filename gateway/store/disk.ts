// The data dir's disk: how much room is free, and the journal's reserve. Node has no
// fallocate, so the reserve is a plain file of zeros written (and fsynced) ahead: its blocks
// are the journal's, and nothing else the gateway or anyone else writes can take them. When
// a journal group finds the disk full, the reserve is released and the group written into
// the room it gave back; the store then refuses new writes (507) until the disk has room for
// the reserve again (docs/deploy.md, "Faults").
import {
  closeSync,
  existsSync,
  ftruncateSync,
  fstatSync,
  fsyncSync,
  openSync,
  statfsSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { fsyncDirectory } from './fs-durable.js';
import { PRIVATE_FILE_MODE } from './private-files.js';

/** The reserve's file in the data dir. */
export const RESERVE_FILE = 'journal.reserve';

/** Room a start needs beyond the reserve (the lock, a first segment, index repairs). */
export const START_ROOM_BYTES = 1024 * 1024;

/** Bytes an unprivileged writer may still write on the file system holding `dir`. */
export function freeBytes(dir: string): number {
  const stats = statfsSync(dir);
  return stats.bavail * stats.bsize;
}

/** "12.3 MiB": sizes in messages. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** The data dir's disk had no room for the gateway to start: one line, naming the disk and the room needed. */
export class DiskFullError extends Error {
  override name = 'DiskFullError';
  constructor(data_dir: string, needed_bytes: number) {
    let free = 'unknown';
    try {
      free = formatBytes(freeBytes(data_dir));
    } catch {
      // the message still names the dir and the need
    }
    super(
      `the disk of data dir ${data_dir} is full (${free} free): the gateway needs ${formatBytes(needed_bytes)} free to start ` +
        `(the journal's reserve, store.disk_reserve_bytes, plus ${formatBytes(START_ROOM_BYTES)}); free space on that disk and start again`,
    );
  }
}

const CHUNK = Buffer.alloc(1024 * 1024);

export class DiskReserve {
  readonly file: string;
  /** Bytes the reserve holds now (0 once released). */
  held_bytes = 0;

  constructor(
    readonly data_dir: string,
    /** What the reserve should hold. */
    readonly target_bytes: number,
  ) {
    this.file = join(data_dir, RESERVE_FILE);
  }

  /** Bytes the reserve still lacks. */
  get missing_bytes(): number {
    return Math.max(0, this.target_bytes - this.held_bytes);
  }

  /** Reads what the reserve file holds now (at open: a reserve left by the last run counts). */
  measure(): void {
    try {
      this.held_bytes = statSync(this.file).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.held_bytes = 0;
    }
  }

  /**
   * Brings the reserve to its target (zeros, fsynced; a larger one left by a run with a larger
   * target is cut down). Throws (ENOSPC) when the disk has not the room: what it held before
   * stays, what this call added is cut off again.
   */
  fill(): void {
    const existed = existsSync(this.file);
    const fd = openSync(this.file, 'a', PRIVATE_FILE_MODE);
    let size = fstatSync(fd).size;
    const before = size;
    try {
      if (size > this.target_bytes) ftruncateSync(fd, (size = this.target_bytes));
      while (size < this.target_bytes) {
        const n = Math.min(CHUNK.length, this.target_bytes - size);
        size += writeSync(fd, CHUNK, 0, n);
      }
      if (size !== before) fsyncSync(fd);
      this.held_bytes = size;
    } catch (error) {
      try {
        ftruncateSync(fd, Math.min(before, this.target_bytes));
      } catch {
        // the next fill or release cuts it
      }
      throw error;
    } finally {
      closeSync(fd);
    }
    if (!existed) fsyncDirectory(join(this.file, '..'));
  }

  /** At open: the reserve as the last run left it, filled to its target; a DiskFullError without the room to start. */
  claim(): void {
    this.measure();
    if (freeBytes(this.data_dir) < this.missing_bytes + START_ROOM_BYTES)
      throw new DiskFullError(this.data_dir, this.target_bytes + START_ROOM_BYTES);
    this.fill();
  }

  /** Gives the reserve's room back to the disk (the journal's next write takes it): true when it held any. */
  release(): boolean {
    if (this.held_bytes === 0) return false;
    const fd = openSync(this.file, 'r+');
    try {
      ftruncateSync(fd, 0);
    } finally {
      closeSync(fd);
    }
    this.held_bytes = 0;
    return true;
  }
}
