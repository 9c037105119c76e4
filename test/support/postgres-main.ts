// One throwaway PostgreSQL cluster for a whole test run (scripts/test-all.sh): prints one JSON
// line {"url","port","dir"} once it accepts connections, then stays up until SIGTERM or SIGINT,
// on which test/support/postgres.ts tears the cluster down.
import { startPostgres } from './postgres.js';

const pg = await startPostgres();
process.stdout.write(`${JSON.stringify({ url: pg.url, port: pg.port, dir: pg.dir })}\n`);
setInterval(() => {}, 60_000);
