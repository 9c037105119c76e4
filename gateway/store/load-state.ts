// The JSON-file store's state as a start (or `verify`, or a migration) reads it from the data
// dir: the checkpoint (state.jsonl, or a version-1 state.json migrated on the way) with the
// journal's records after it replayed, the history indexes brought up to the journal's end.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { ARCHIVED_TABLES, isArchivedRow, type Archive } from './archive.js';
import { DurableJsonLinesFile } from './durable-file.js';
import { readJournalPlaced } from './journal.js';
import { readLegacyState } from './legacy-state.js';
import {
  applyOp,
  detachPrototypes,
  emptyState,
  type JournalRecord,
  type State,
  type TableName,
} from './state.js';

/** The checkpoint (JSON lines, read as a stream). */
export const STATE_FILE = 'state.jsonl';
/** The one-document checkpoint of the format before it: read once, migrated, removed. */
export const LEGACY_STATE_FILE = 'state.json';
export const JOURNAL_DIR = 'journal';

export interface LoadedState {
  state: State;
  replayed: number;
  /** The data dir held a state.json of version 1: its finalized rows were moved to history. */
  migrated: boolean;
}

/**
 * Loads checkpoint + journal replay, and brings `archive` (when given) up to the journal's
 * end: the records after min(checkpoint, index manifest) are read once, each applied to the
 * state and/or indexed as each needs it. Used by the store and by `verify`.
 */
export async function loadState(
  data_dir: string,
  options: {
    repair: boolean;
    warn?: (message: string) => void;
    now: () => Date;
    archive?: Archive;
    up_to_seq?: number;
  },
): Promise<LoadedState> {
  let state: State;
  let migrated = false;
  const legacy = join(data_dir, LEGACY_STATE_FILE);
  if (!existsSync(join(data_dir, STATE_FILE)) && existsSync(legacy)) {
    // Streamed, finalized rows dropped on the way: a state.json past 512 MB migrates too.
    const read = await readLegacyState(legacy);
    if (!read) throw new Error(`checkpoint ${legacy} vanished while it was being opened`);
    state = read.state;
    migrated = true;
  } else {
    const db = new Low<State>(
      new DurableJsonLinesFile(join(data_dir, STATE_FILE)),
      emptyState(options.now().toISOString()),
    );
    await db.read();
    state = db.data;
  }
  detachPrototypes(state);
  let replayed = 0;
  const archive = options.archive;
  const from_seq = archive ? Math.min(state.seq, archive.seq) : state.seq;
  const journal = readJournalPlaced(join(data_dir, JOURNAL_DIR), from_seq, {
    repair: options.repair,
    ...(options.up_to_seq !== undefined ? { up_to_seq: options.up_to_seq } : {}),
    onTornLine: (file, line, bytes) =>
      options.warn?.(
        `dropped a torn last journal line (${bytes} bytes at ${file} line ${line}): a crash interrupted that write before it was acknowledged`,
      ),
  });
  for (const { record, place } of journal) {
    if (record.s > state.seq) {
      applyRecord(state, record);
      replayed++;
    }
    archive?.apply(record, place.segment, place.offset, place.length);
  }
  if (migrated) {
    // Version 1 kept finalized rows in the document: they are history now (every one is in
    // the journal line that finalized it, which the indexes, built from the first record,
    // point at).
    state.version = 2;
    for (const name of ARCHIVED_TABLES) {
      const rows = state.tables[name as TableName] as Record<string, unknown> | undefined;
      if (!rows) continue;
      for (const id of Object.keys(rows)) if (isArchivedRow(name, rows[id])) delete rows[id];
    }
  }
  return { state, replayed, migrated };
}

export function applyRecord(state: State, record: JournalRecord): void {
  for (const op of record.ops) applyOp(state, op);
  state.seq = record.s;
}

/** The checkpoint on disk as it is (no journal replay): tests and tools. */
export function readCheckpoint(data_dir: string): Promise<State | null> {
  return new DurableJsonLinesFile(join(data_dir, STATE_FILE)).read();
}
