// One writer per data dir: a second gateway on the same files would interleave journals.
import { linkSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { PRIVATE_FILE_MODE } from './private-files.js';

export class LockedError extends Error {
  override name = 'LockedError';
}

interface LockInfo {
  pid: number;
  host: string;
  started_at: string;
}

/** Whether a process with this id runs on this host (one we may not signal counts as running). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock or throws LockedError naming the holder; a lock left by a dead process is taken over. */
export function acquireLock(data_dir: string): () => void {
  const lock_file = join(data_dir, 'gateway.lock');
  const mine: LockInfo = {
    pid: process.pid,
    host: hostname(),
    started_at: new Date().toISOString(),
  };
  const temp = `${lock_file}.${process.pid}`;
  try {
    writeFileSync(temp, JSON.stringify(mine), { mode: PRIVATE_FILE_MODE });
  } catch (error) {
    // Made but not written (a full disk): no stray temp file is left behind.
    rmSync(temp, { force: true });
    throw error;
  }
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(temp, lock_file); // atomic: fails if the lock exists
        return () => {
          try {
            const holder = JSON.parse(readFileSync(lock_file, 'utf8')) as LockInfo;
            if (holder.pid === process.pid) unlinkSync(lock_file);
          } catch {
            // already gone
          }
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      let holder: LockInfo | null = null;
      try {
        holder = JSON.parse(readFileSync(lock_file, 'utf8')) as LockInfo;
      } catch {
        holder = null; // unreadable: written by a process that died mid-write
      }
      if (
        holder &&
        holder.pid !== process.pid &&
        (holder.host !== mine.host || isAlive(holder.pid))
      ) {
        throw new LockedError(
          `data dir ${data_dir} is in use by another AIHub gateway (pid ${holder.pid} on ${holder.host}, started ${holder.started_at}); stop it first`,
        );
      }
      try {
        unlinkSync(lock_file);
      } catch {
        // another starter removed it first; try again
      }
    }
    throw new LockedError(`could not take the lock ${lock_file}`);
  } finally {
    unlinkSync(temp);
  }
}
