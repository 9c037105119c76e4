// CSV as the room writes it (RFC 4180, CRLF line ends, cells guarded against spreadsheet
// formulas): a table's lines, and a report's download streamed as its rows are read.
import type { Response } from 'express';
import { ClientGoneError, drained } from '../../http/client-gone.js';
import type { Pacer } from '../../store/turns.js';
import type { ReportSlot } from './report-slots.js';

export type Cell = string | number | boolean | null;
export type Row = Record<string, Cell>;

/** A CSV cell: numbers as they are in the JSON; text quoted, and guarded against spreadsheet formulas. */
export function csvCell(value: Cell): string {
  if (value === null) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const guarded = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n']/.test(guarded) || guarded !== value
    ? `"${guarded.replace(/"/g, '""')}"`
    : guarded;
}

/** One CSV line of a row (RFC 4180: CRLF line end), its cells in `columns` order. */
export function csvLine(columns: readonly string[], row: Row): string {
  return `${columns.map((column) => csvCell(row[column] ?? null)).join(',')}\r\n`;
}

/** RFC 4180: a header line, then one line per row, CRLF line ends. */
export function toCsv(columns: readonly string[], rows: readonly Row[]): string {
  return `${columns.join(',')}\r\n${rows.map((row) => csvLine(columns, row)).join('')}`;
}

/** How a CSV download runs: its turns, its client's signal, how long it waits for a client that takes nothing. */
export interface Download {
  pacer: Pacer;
  signal: AbortSignal;
  stall_ms: number;
  /** Counts the downloads waiting for their client now (for /metrics). */
  waiting?: { count: number };
  /** The download's report slot: another account's report may take it while the client takes nothing. */
  slot?: ReportSlot;
}

/**
 * Writes a CSV download as its rows are read: each batch (at most a chunk of rows: 16
 * transactions, 256 index entries of the other reports) is written when it has been read, in
 * the turn that read it, so a 10,000-row download is neither one string nor more than its
 * share of a busy gateway. When `res` pushes back, the download waits for 'drain' before it
 * reads on (its pacer ended meanwhile: a slow client's wait is not report work), so memory
 * holds a batch, never the download. Stops (rejects with the signal's reason) when `signal`
 * aborts, and drops a client that takes nothing for `stall_ms` (a ClientGoneError): a
 * download holds a report slot, and a client that stops reading must not hold it for ever.
 * A read that fails mid-download drops the connection too (the client sees a cut body).
 */
export async function streamCsv(
  res: Response,
  { pacer, signal, stall_ms, waiting, slot }: Download,
  name: string,
  columns: readonly string[],
  batches: AsyncIterable<Row[]>,
): Promise<void> {
  res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="${name}.csv"`);
  res.setHeader('Cache-Control', 'no-store');
  let ready = res.write(`${columns.join(',')}\r\n`);
  const reader = batches[Symbol.asyncIterator]();
  try {
    for (;;) {
      // The next batch is read only once the last one has left (never while `res` pushes back).
      if (!ready) {
        pacer.end();
        slot?.stall(); // a client that takes nothing keeps no other account's report waiting
        if (waiting) waiting.count++;
        let moved: boolean;
        try {
          moved = await drained(res, signal, stall_ms);
        } finally {
          if (waiting) waiting.count--;
        }
        signal.throwIfAborted();
        if (!moved)
          throw new ClientGoneError(`the client took none of the download for ${stall_ms} ms`);
        await slot?.unstall(); // a slot again (its fair turn, if it gave its own up) before it reads on
      }
      const step = await reader.next();
      if (step.done) break;
      let text = '';
      for (const row of step.value) text += csvLine(columns, row);
      ready = res.write(text);
    }
  } catch (error) {
    // Cut short (the client left, or a read failed): the connection is dropped, never ended,
    // so that a partial download cannot pass for a whole one.
    res.destroy();
    throw error;
  } finally {
    await reader.return?.();
  }
  res.end();
}
