// What other gateways announce (LISTEN aihub_cache; the commit statement NOTIFYs the keys of
// announced tables it wrote): those entries are dropped from this gateway's cache, to be
// loaded fresh when read. No other gateway's writes are applied here.
import pg from 'pg';
import type { PgCache } from './cache.js';
import { SEP } from './keys.js';
import type { PgDb } from './pool.js';

export class Announcements {
  private listener: pg.Client | null = null;

  constructor(
    private readonly db: PgDb,
    private readonly cache: PgCache,
    private readonly gateway_id: string,
  ) {}

  /** Whether the listener is connected (or connecting). */
  get listening(): boolean {
    return this.listener !== null;
  }

  /** LISTEN for announced keys; on every (re)connection the announced tables' entries are dropped. */
  async listen(): Promise<void> {
    if (this.db.closed || this.listener) return;
    const client = new pg.Client({
      connectionString: this.db.database_url,
      application_name: 'aihub-gateway-listen',
    });
    this.listener = client;
    client.on('error', () => {
      if (this.listener === client) this.listener = null;
      client.end().catch(() => {});
    });
    client.on('notification', (message) => this.announced(message.payload ?? ''));
    try {
      await client.connect();
      this.db.sent('listen');
      await client.query('LISTEN aihub_cache');
      // Whatever was announced while this gateway was not listening is dropped.
      this.db.stats.invalidations += this.cache.invalidateAnnounced();
    } catch {
      if (this.listener === client) this.listener = null;
      client.end().catch(() => {});
    }
  }

  private announced(payload: string): void {
    const at = payload.indexOf('\n');
    if (at < 0 || payload.slice(0, at) === this.gateway_id) return;
    const keys = payload.slice(at + 1);
    if (keys === '*') {
      this.db.stats.invalidations += this.cache.invalidateAnnounced();
      return;
    }
    for (const key of keys.split('\n')) {
      const kind = key.split(SEP).length === 3 ? 'i' : 'r';
      if (this.cache.invalidate(`${kind}${key}`)) this.db.stats.invalidations++;
    }
  }

  async close(): Promise<void> {
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => {});
  }
}
