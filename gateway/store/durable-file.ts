// A lowdb adapter that survives power loss: lowdb's stock TextFile adapter renames a temp
// file into place without fsync, which can leave an empty or old file after a crash.
import { readFile, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Adapter } from 'lowdb';
import { CorruptStoreError, fsyncDirectory } from './journal.js';
import { PRIVATE_FILE_MODE } from './private-files.js';

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
    await this.writeParts(async (emit) => emit(text));
  }

  /**
   * Writes the file from text that `produce` hands over part by part (each `emit` waits for
   * its write, so the event loop runs between parts), fsyncs it, waits for `before_publish`,
   * and only then renames it over the old file and fsyncs the directory. Until that rename
   * the old file stays whole; a crash leaves at most a stray `.tmp`.
   */
  async writeParts(produce: (emit: (text: string) => Promise<void>) => Promise<void>, before_publish?: () => Promise<void>): Promise<void> {
    const temp = `${this.file}.tmp`;
    const handle = await open(temp, 'w', PRIVATE_FILE_MODE);
    try {
      await produce(async (text) => {
        const bytes = Buffer.from(text, 'utf8');
        for (let at = 0; at < bytes.length; ) at += (await handle.write(bytes, at, bytes.length - at)).bytesWritten;
      });
      await handle.sync();
    } finally {
      await handle.close();
    }
    await before_publish?.();
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
