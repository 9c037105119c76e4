// Where the encryption keys come from: AIHUB_ENCRYPTION_KEY (the current key) and
// AIHUB_ENCRYPTION_OLD_KEYS (comma-separated, still opened during a rotation), else the data
// dir's `encryption.key` (one key per line, the first is current), generated 0600 on the first
// start. The keys of the file are always opened too, so moving from the file to the
// environment needs no extra step.
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { newKey, parseKey } from '../util/sealed.js';
import { fsyncDirectory } from './fs-durable.js';
import { PRIVATE_FILE_MODE } from './private-files.js';

export const KEY_FILE = 'encryption.key';

export interface KeyRing {
  /** The first key seals; every key opens. */
  keys: Buffer[];
  /** Where the current key came from. */
  source: 'env' | 'file' | 'generated';
}

export function readKeyFile(data_dir: string): Buffer[] {
  const file = join(data_dir, KEY_FILE);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line, i) => parseKey(line, `${file} line ${i + 1}`));
}

/** Replaces the key file durably (temp 0600, fsync, rename, fsync of the directory). */
export function writeKeyFile(data_dir: string, keys: readonly Buffer[]): void {
  const file = join(data_dir, KEY_FILE);
  const temp = `${file}.tmp`;
  const text = `# AIHub encryption keys (AES-256-GCM), the first one seals. Keep a copy apart from the data dir's backups.\n${keys.map((key) => key.toString('hex')).join('\n')}\n`;
  const fd = openSync(temp, 'w', PRIVATE_FILE_MODE);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
  fsyncDirectory(data_dir);
}

/** The key ring for a data dir (which exists and has been checked); generates the key file on the first start. */
export function loadKeyRing(data_dir: string, env: NodeJS.ProcessEnv): KeyRing {
  const old = (env.AIHUB_ENCRYPTION_OLD_KEYS ?? '')
    .split(',')
    .map((text) => text.trim())
    .filter(Boolean)
    .map((text, i) => parseKey(text, `AIHUB_ENCRYPTION_OLD_KEYS entry ${i + 1}`));
  const from_file = readKeyFile(data_dir);
  if (env.AIHUB_ENCRYPTION_KEY)
    return {
      keys: [parseKey(env.AIHUB_ENCRYPTION_KEY, 'AIHUB_ENCRYPTION_KEY'), ...old, ...from_file],
      source: 'env',
    };
  if (from_file.length > 0) return { keys: [...from_file, ...old], source: 'file' };
  const key = newKey();
  writeKeyFile(data_dir, [key]);
  return { keys: [key, ...old], source: 'generated' };
}
