// Starts a throwaway cluster, prints {"dir","port"} and then fails the way a test does
// (an uncaught error), so that postgres.test.ts can check the cluster went away with it.
import { startPostgres } from './postgres.js';

const pg = await startPostgres();
process.stdout.write(`${JSON.stringify({ dir: pg.dir, port: pg.port })}\n`);
if (process.argv[2] === 'throw') throw new Error('a failing test');
// 'wait': stay up until the parent signals us
setInterval(() => {}, 1000);
