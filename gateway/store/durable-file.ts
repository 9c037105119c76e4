// A lowdb adapter that survives power loss: lowdb's stock TextFile adapter renames a temp
// file into place without fsync, which can leave an empty or old file after a crash.
import { createReadStream, readdirSync, rmSync } from 'node:fs';
import { readFile, open, rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { basename, dirname, join, resolve } from 'node:path';
import type { Adapter } from 'lowdb';
import { fsyncDirectory } from './fs-durable.js';
import { CorruptStoreError } from './journal.js';
import { PRIVATE_FILE_MODE } from './private-files.js';
import { isArchivedRow, type State } from './state.js';

/**
 * The write in flight of each file in this process (its promise settles when the write is
 * done either way): a write of a file waits for the one before it. Two writers of one file
 * at once (a checkpoint's index manifest and `Archive.sync` at close, say) used to share
 * one `<file>.tmp`: the second `open(..., 'w')` truncated the first's half-written text,
 * and the second rename found the temp file gone (ENOENT) or published a mixed file.
 */
const writes_in_flight = new Map<string, Promise<void>>();
/** Each write's own temp file: `<file>.<pid>.<n>.tmp`. */
let temp_serial = 0;

export class DurableJsonFile<T> implements Adapter<T> {
  private readonly file: string;
  constructor(file: string) {
    // One name per file, however it was reached, so that the writes of one file queue together.
    this.file = resolve(file);
  }

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
      throw new CorruptStoreError(
        `checkpoint ${this.file} ${describeJsonError(text, error as Error)}; refusing to start over it`,
      );
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
   * the old file stays whole; a crash leaves at most a stray `.tmp` (removeStaleTemps).
   * Writes of one file are serialized in this process, each through its own temp file.
   */
  writeParts(
    produce: (emit: (text: string) => Promise<void>) => Promise<void>,
    before_publish?: () => Promise<void>,
  ): Promise<void> {
    // One writer per file: this write starts once the one before it has settled.
    const before = writes_in_flight.get(this.file);
    const write = (before ?? Promise.resolve()).then(() => this.writeNow(produce, before_publish));
    const settled = write.then(
      () => {},
      () => {},
    );
    writes_in_flight.set(this.file, settled);
    void settled.then(() => {
      if (writes_in_flight.get(this.file) === settled) writes_in_flight.delete(this.file);
    });
    return write;
  }

  private async writeNow(
    produce: (emit: (text: string) => Promise<void>) => Promise<void>,
    before_publish?: () => Promise<void>,
  ): Promise<void> {
    const temp = `${this.file}.${process.pid}.${++temp_serial}.tmp`;
    let published = false;
    try {
      const handle = await open(temp, 'wx', PRIVATE_FILE_MODE);
      try {
        await produce(async (text) => {
          const bytes = Buffer.from(text, 'utf8');
          for (let at = 0; at < bytes.length;)
            at += (await handle.write(bytes, at, bytes.length - at)).bytesWritten;
        });
        await handle.sync();
      } finally {
        await handle.close();
      }
      await before_publish?.();
      await rename(temp, this.file);
      published = true;
    } finally {
      // A write that failed leaves no temp file behind (the old file is whole).
      if (!published) await rm(temp, { force: true }).catch(() => {});
    }
    fsyncDirectory(dirname(this.file));
  }

  /**
   * Removes the temp files that writes cut short by a crash left beside the file (this
   * process's or an earlier one's: call it only while holding the data dir's lock).
   */
  removeStaleTemps(): void {
    removeStaleTemps(this.file);
  }
}

/** Removes `<file>.tmp` and `<file>.<anything>.tmp` beside `file`: temps of writes a crash cut short. */
export function removeStaleTemps(file: string): void {
  const dir = dirname(file);
  const name = basename(file);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const entry of names)
    if (entry.startsWith(`${name}.`) && entry.endsWith('.tmp'))
      rmSync(join(dir, entry), { force: true, recursive: true });
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

/**
 * The checkpoint as JSON lines, read as a stream: a head line (format, version, seq, meta),
 * then one line per balance `["b", ledger_account, micros]` and per row `["r", table, id,
 * row]`, then `["end", lines]`. No single string holds the state and no single JSON.parse
 * reads it (the one-document state.json could not be read past 512 MB: V8's string limit).
 */
export class DurableJsonLinesFile implements Adapter<State> {
  private readonly file: DurableJsonFile<unknown>;
  constructor(readonly path: string) {
    this.file = new DurableJsonFile(path);
  }

  async read(): Promise<State | null> {
    let input;
    try {
      input = createReadStream(this.path, { encoding: 'utf8' });
      await once(input, 'open');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    const lines = createInterface({ input, crlfDelay: Infinity });
    let state: State | null = null;
    let line_number = 0;
    let ended = false;
    for await (const line of lines) {
      line_number++;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        throw new CorruptStoreError(
          `checkpoint ${this.path} line ${line_number}: ${(error as Error).message}; refusing to start over it`,
        );
      }
      if (state === null) {
        const head = value as Partial<State>;
        if (head.format !== 'aihub-state' || head.version !== 2 || typeof head.seq !== 'number')
          throw new CorruptStoreError(`checkpoint ${this.path} is not an AIHub state of version 2`);
        state = {
          format: 'aihub-state',
          version: 2,
          seq: head.seq,
          meta: head.meta!,
          balances: {},
          tables: {},
        };
        continue;
      }
      if (!Array.isArray(value) || ended)
        throw new CorruptStoreError(
          `checkpoint ${this.path} line ${line_number}: not a checkpoint line`,
        );
      if (value[0] === 'b') setOwn(state.balances, String(value[1]), value[2]);
      else if (value[0] === 'r') {
        const tables = state.tables as Record<string, Record<string, unknown>>;
        const name = String(value[1]);
        if (!Object.hasOwn(tables, name)) setOwn(tables, name, {});
        // A final row of an archived table is history (a checkpoint written before its table
        // was archived holds some: idempotency records before issue #26); the index, built
        // again from the first record when its manifest is older, finds it by id.
        if (!isArchivedRow(name, value[3])) setOwn(tables[name]!, String(value[2]), value[3]);
      } else if (value[0] === 'end' && value[1] === line_number) ended = true;
      else
        throw new CorruptStoreError(
          `checkpoint ${this.path} line ${line_number}: not a checkpoint line`,
        );
    }
    if (!state || !ended)
      throw new CorruptStoreError(
        `checkpoint ${this.path} ends before its last line; refusing to start over it`,
      );
    return state;
  }

  /** Whole-state writes go through writeParts (Store.checkpoint); this one serves lowdb's interface. */
  async write(state: State): Promise<void> {
    await this.writeParts(async (emit) => {
      const lines = checkpointHead(state);
      for (const [name, rows] of Object.entries(state.tables))
        for (const [id, row] of Object.entries(rows ?? {}))
          lines.push(checkpointRow(name, id, row));
      lines.push(checkpointEnd(lines.length + 1));
      await emit(lines.join(''));
    });
  }

  writeParts(
    produce: (emit: (text: string) => Promise<void>) => Promise<void>,
    before_publish?: () => Promise<void>,
  ): Promise<void> {
    return this.file.writeParts(produce, before_publish);
  }

  removeStaleTemps(): void {
    this.file.removeStaleTemps();
  }
}

/** Sets an own property, even one named `__proto__` (a plain assignment would change the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  else target[key] = value;
}

/** The head line and the balance lines of a checkpoint (each ends in a newline). */
export function checkpointHead(state: State): string[] {
  const lines = [
    `${JSON.stringify({ format: 'aihub-state', version: 2, seq: state.seq, meta: state.meta })}\n`,
  ];
  for (const [ledger_account, micros] of Object.entries(state.balances))
    lines.push(`${JSON.stringify(['b', ledger_account, micros])}\n`);
  return lines;
}

export const checkpointRow = (table: string, id: string, row: unknown): string =>
  `${JSON.stringify(['r', table, id, row])}\n`;
export const checkpointEnd = (line_number: number): string =>
  `${JSON.stringify(['end', line_number])}\n`;
