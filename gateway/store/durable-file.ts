// A lowdb adapter that survives power loss: lowdb's stock TextFile adapter renames a temp
// file into place without fsync, which can leave an empty or old file after a crash.
import { readFile, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Adapter } from 'lowdb';
import { CorruptStoreError, fsyncDirectory } from './journal.js';

export class DurableJsonFile<T> implements Adapter<T> {
  constructor(private readonly file: string) {}

  async read(): Promise<T | null> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new CorruptStoreError(`checkpoint ${this.file} ${describeJsonError(text, error as Error)}; refusing to start over it`);
    }
  }

  /** Serializes synchronously (a consistent snapshot of `data`), then writes, fsyncs, renames, fsyncs the directory. */
  async write(data: T): Promise<void> {
    const text = JSON.stringify(data);
    const temp = `${this.file}.tmp`;
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, this.file);
    fsyncDirectory(dirname(this.file));
  }
}

/** "line L column C: <reason>" from a JSON.parse error, which reports a character position. */
export function describeJsonError(text: string, error: Error): string {
  const match = /position (\d+)/.exec(error.message);
  if (!match) {
    const lines = text.split('\n').length;
    return `line ${lines}: ${error.message}`;
  }
  const position = Number(match[1]);
  const before = text.slice(0, position);
  const line = before.split('\n').length;
  const column = position - before.lastIndexOf('\n');
  return `line ${line} column ${column}: ${error.message}`;
}
