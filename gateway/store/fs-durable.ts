// Durable writes to files, for every writer of the data dir (the journal, the checkpoint, the
// indexes, the key file; the rooms' own files such as eKYC documents): a new or renamed
// file's directory entry is durable only once its directory is fsynced, and a write the disk
// had no room for is told apart from other failures.
import { closeSync, fsyncSync, openSync } from 'node:fs';

/** The errors of a write the disk had no room for. */
export function isNoSpace(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/** Makes the entries of `dir` (a file created, renamed or removed in it) durable. */
export function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
