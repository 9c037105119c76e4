// Reads the one-document checkpoint of version 1 (`state.json`) as a stream, for its
// migration: a document past V8's largest string (512 MB: 500,000 finalized transactions)
// cannot be read whole. @streamparser/json (a maintained streaming JSON parser; hand-parsing
// JSON is not this project's business, and it was three to four times faster here than
// stream-json's token streams) emits each value below `tables.<name>.<id>` and
// `balances.<account>` on its own and keeps nothing of what it emitted (`keepStack: false`);
// it sets a key named `__proto__` as data. Finalized rows of archived tables are dropped as
// they stream past (each lives in the journal line that finalized it): memory holds the live
// state only.
import { createReadStream } from 'node:fs';
import { JSONParser } from '@streamparser/json';
import { CorruptStoreError } from './journal.js';
import { isArchivedRow, type State } from './state.js';

/** Sets an own property, even one named `__proto__`. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** The document of `file`, without its finalized archived rows; null when there is no file. */
export async function readLegacyState(
  file: string,
): Promise<{ state: State; dropped: number } | null> {
  const input = createReadStream(file, { highWaterMark: 1 << 20 });
  try {
    await new Promise<void>((resolve, reject) => {
      input.once('open', () => resolve());
      input.once('error', reject);
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const top: Record<string, unknown> = {};
  const balances: Record<string, unknown> = {};
  const tables: Record<string, Record<string, unknown>> = {};
  let dropped = 0;
  let ended = false;
  const parser = new JSONParser({
    paths: ['$.format', '$.version', '$.seq', '$.meta', '$.balances.*', '$.tables.*.*'],
    keepStack: false,
  });
  parser.onValue = ({ value, key, stack }) => {
    const path = stack.map((element) => element.key);
    if (stack.length === 1) setOwn(top, String(key), value);
    else if (stack.length === 2 && path[1] === 'balances') setOwn(balances, String(key), value);
    else if (stack.length === 3 && path[1] === 'tables') {
      const name = String(path[2]);
      if (!Object.hasOwn(tables, name)) setOwn(tables, name, {});
      if (isArchivedRow(name, value)) dropped++;
      else setOwn(tables[name]!, String(key), value);
    }
  };
  parser.onEnd = () => {
    ended = true;
  };
  const bad = (why: string) =>
    new CorruptStoreError(`checkpoint ${file}: ${why}; refusing to migrate it`);
  try {
    for await (const chunk of input) parser.write(chunk as Buffer);
    if (!ended) parser.end();
  } catch (error) {
    throw bad((error as Error).message);
  } finally {
    input.destroy();
  }
  if (!ended) throw bad('it ends before the document does');
  if (top.format !== 'aihub-state' || top.version !== 1 || typeof top.seq !== 'number')
    throw bad('not an AIHub state document of version 1');
  const state = { ...top, balances, tables } as unknown as State;
  return { state, dropped };
}
