// The data dir holds webhook secrets, emails, PAN and mobile numbers and eKYC documents: it is
// created 0700 and every file in it 0600, and, as PostgreSQL does, the gateway refuses to
// start on a data dir where group or others have any access, rather than tighten modes
// behind an operator's back (a wrong mode there means someone else may already have read it).
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

export class DataDirModeError extends Error {
  override name = 'DataDirModeError';
}

/** mkdir -p with mode 0700 (for every directory it creates). */
export function mkdirPrivate(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Creates the data dir (0700) if missing, then walks it: the dir must belong to this user,
 * and no directory or file in it may grant group or others any access. Throws
 * DataDirModeError naming the first offender and the fix. POSIX only (Windows has no modes).
 */
export function ensurePrivateDataDir(data_dir: string): void {
  mkdirPrivate(data_dir);
  if (process.platform === 'win32') return;
  const root = statSync(data_dir);
  const uid = process.getuid?.();
  if (uid !== undefined && root.uid !== uid) {
    throw new DataDirModeError(
      `data dir ${data_dir} is owned by uid ${root.uid}, not by the user running the gateway (uid ${uid}); run the gateway as its owner or chown it`,
    );
  }
  const offender = firstOpenEntry(data_dir);
  if (offender) {
    throw new DataDirModeError(
      `data dir ${data_dir}: ${offender.path} has mode ${offender.mode.toString(8).padStart(4, '0')}, so group or others can access it; ` +
        `the data dir holds secrets and personal data. Fix it with: chmod -R go-rwx ${data_dir}`,
    );
  }
}

function firstOpenEntry(path: string): { path: string; mode: number } | null {
  const stat = statSync(path);
  const mode = stat.mode & 0o7777;
  if (mode & 0o077) return { path, mode };
  if (!stat.isDirectory()) return null;
  for (const name of readdirSync(path)) {
    const found = firstOpenEntry(join(path, name));
    if (found) return found;
  }
  return null;
}
