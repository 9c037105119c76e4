// The PostgreSQL store's reads of the tables outside transactions (docs/store-postgres.md,
// "Reads outside transactions"): read(fn) runs on the cache and loads what it missed before
// it runs again; fetch, list, count, page, scan and below ask the database, keeping what they
// read in the cache; indexBy declares an index and makes sure of its partial index.
import { StoreUnavailableError } from '../../kernel/errors.js';
import type { IndexOptions, PageOptions, TableIndex } from '../types.js';
import type { Row, State, TableName } from '../state.js';
import { Run, type PgCache } from './cache.js';
import type { Flights } from './flights.js';
import { SEP, checkFieldName } from './keys.js';
import { MAX_LOAD_ROUNDS, type CacheLoads } from './loads.js';
import type { PgDb } from './pool.js';
import { ensureFieldIndex } from './schema.js';

type ReadRow = { id: string; ver: string; row: string };

export class TableReads {
  /** The table and field pairs whose partial index was made sure of. */
  private readonly indexed = new Set<string>();

  constructor(
    private readonly db: PgDb,
    private readonly cache: PgCache,
    private readonly loads: CacheLoads,
    private readonly flights: Flights,
    private readonly warn: (message: string) => void,
  ) {}

  async read<T>(fn: (state: State) => T, options: { fresh?: boolean } = {}): Promise<T> {
    if (this.db.closed) throw new StoreUnavailableError('the store is closed');
    let fresh_from = 0;
    if (options.fresh) {
      await this.flights.quiesce();
      fresh_from = ++this.cache.load_seq;
    }
    for (let round = 0; ; round++) {
      const run = new Run('read', fresh_from);
      run.sync_loads = round >= 2;
      const previous = this.cache.current;
      this.cache.current = run;
      let result: T | undefined;
      let error: unknown;
      let threw = false;
      try {
        result = fn(this.cache.state);
      } catch (caught) {
        error = caught;
        threw = true;
      } finally {
        this.cache.current = previous;
      }
      if (run.misses.size === 0 || round >= MAX_LOAD_ROUNDS) {
        if (threw) throw error;
        return result as T;
      }
      await this.loads.load(run.misses, 'read');
    }
  }

  fetch<T extends TableName>(name: T, id: string): Promise<Row<T> | undefined> {
    return this.read(() => this.get(name, id), { fresh: true });
  }

  get<T extends TableName>(name: T, id: string): Row<T> | undefined {
    return this.cache.readRow(name, id) as Row<T> | undefined;
  }

  async readDurable(): Promise<void> {
    if (this.db.closed) throw new StoreUnavailableError('the store is closed');
    await this.flights.quiesce();
    this.cache.durable_mark = ++this.cache.load_seq;
  }

  indexBy<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    options: IndexOptions = {},
  ): TableIndex<T> {
    checkFieldName(field);
    this.cache.declare(name, field, options.in_transactions ?? false);
    const pair = `${name}${SEP}${field}`;
    if (!this.indexed.has(pair)) {
      this.indexed.add(pair);
      void ensureFieldIndex(this.db.pool, name, field).catch((error: unknown) =>
        this.warn(`could not create the index of ${name} by ${field}: ${(error as Error).message}`),
      );
    }
    const cache = this.cache;
    return {
      field,
      ids: (key: string) => cache.readIndex(name, field, key),
      *rows(key: string): Generator<Row<T>> {
        for (const id of [...cache.readIndex(name, field, key)]) {
          const row = cache.readRow(name, id) as Row<T> | undefined;
          if (row !== undefined) yield row;
        }
      },
    };
  }

  async list<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    key: string,
  ): Promise<Array<Row<T>>> {
    const sent = this.cache.load_seq;
    const rows = await this.db.query<ReadRow>(
      `SELECT id, ver::text AS ver, row::text AS row FROM aihub.rows WHERE tbl = $1 AND row->>'${checkFieldName(field)}' = $2 ORDER BY created`,
      [name, key],
      'read',
    );
    return this.keep(name, rows, sent);
  }

  /** Rows read by a query: into the cache (current), and their values. */
  private keep<T extends TableName>(name: T, rows: ReadRow[], sent: number): Array<Row<T>> {
    this.cache.load_seq++;
    this.db.stats.rows_loaded += rows.length;
    return rows.map(({ id, ver, row }) => {
      const value = JSON.parse(row) as Row<T>;
      this.cache.putRow(name, id, value, Number(ver), sent);
      return value;
    });
  }

  async count(name: TableName): Promise<number> {
    const rows = await this.db.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM aihub.rows WHERE tbl = $1',
      [name],
      'read',
    );
    return Number(rows[0]?.n ?? 0);
  }

  async page<T extends TableName>(name: T, options: PageOptions): Promise<Array<Row<T>>> {
    if (options.limit <= 0) return [];
    const sent = this.cache.load_seq;
    const rows = await this.db.query<ReadRow>(
      `SELECT id, ver::text AS ver, row::text AS row FROM aihub.rows WHERE tbl = $1
       ORDER BY created ${options.newest_first ? 'DESC' : 'ASC'} OFFSET $2 LIMIT $3`,
      [name, Math.max(0, options.offset), options.limit],
      'read',
    );
    return this.keep(name, rows, sent);
  }

  async *scan(name: TableName, chunk = 1_000): AsyncGenerator<string[]> {
    const top = await this.db.query<{ top: string | null }>(
      'SELECT max(created)::text AS top FROM aihub.rows WHERE tbl = $1',
      [name],
      'read',
    );
    const until = top[0]?.top;
    if (until === null || until === undefined) return;
    let after = '0';
    for (;;) {
      const rows = await this.db.query<{ id: string; created: string }>(
        `SELECT r.id, r.created::text AS created FROM aihub.rows r
         WHERE r.tbl = $1 AND r.created > $2::bigint AND r.created <= $3::bigint ORDER BY r.created LIMIT $4`,
        [name, after, until, chunk],
        'read',
      );
      if (rows.length === 0) return;
      after = rows.at(-1)!.created;
      yield rows.map((row) => row.id);
      if (rows.length < chunk) return;
    }
  }

  async below(
    name: TableName,
    field: string,
    value: number | string,
    limit: number,
  ): Promise<string[]> {
    checkFieldName(field);
    const expression =
      typeof value === 'number' ? `((row->>'${field}')::bigint)` : `(row->>'${field}')`;
    const rows = await this.db.query<{ id: string }>(
      `SELECT id FROM aihub.rows WHERE tbl = $1 AND ${expression} < $2 ORDER BY ${expression} LIMIT $3`,
      [name, value, limit],
      'read',
    );
    return rows.map((row) => row.id);
  }
}
