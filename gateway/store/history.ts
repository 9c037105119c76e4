// Reads every posting and history record back from the journal, oldest first: a whole-
// history pass for tools and tests. Requests never use it; they read through the indexes
// (store.reads, see archive.ts and reads.ts).
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { listSegments } from './journal.js';
import type { HistoryRecord, JournalRecord, Posting } from './state.js';
import { JOURNAL_DIR } from './load-state.js';

export type HistoryItem =
  | { seq: number; ts: string; posting: Posting }
  | { seq: number; ts: string; record: HistoryRecord };

/**
 * Every posting and history record with seq in (after_seq, up_to_seq], oldest first.
 * Only complete lines are read; a line being appended right now is skipped.
 */
export async function* scanHistory(
  data_dir: string,
  options: { after_seq?: number; up_to_seq?: number } = {},
): AsyncGenerator<HistoryItem> {
  const after_seq = options.after_seq ?? 0;
  const up_to_seq = options.up_to_seq ?? Number.MAX_SAFE_INTEGER;
  const segments = listSegments(join(data_dir, JOURNAL_DIR));
  for (let i = 0; i < segments.length; i++) {
    const next_first = segments[i + 1]?.first_seq ?? Number.MAX_SAFE_INTEGER;
    if (next_first - 1 <= after_seq) continue;
    if (segments[i]!.first_seq > up_to_seq) return;
    const lines = createInterface({
      input: createReadStream(segments[i]!.file, { encoding: 'utf8' }),
      crlfDelay: Infinity,
    });
    for await (const line of lines) {
      let record: JournalRecord;
      try {
        record = JSON.parse(line) as JournalRecord;
      } catch {
        continue; // a torn or in-progress tail
      }
      if (record.s <= after_seq) continue;
      if (record.s > up_to_seq) return;
      for (const op of record.ops) {
        if (op.o === 'post') yield { seq: record.s, ts: op.p.ts, posting: op.p };
        else if (op.o === 'hist') yield { seq: record.s, ts: op.r.ts, record: op.r };
      }
    }
  }
}
