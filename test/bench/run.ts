// npm run bench: every benchmark, one after the other (each prints its own side-by-side table).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

const scripts = (
  JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }
).scripts;
const benches = Object.keys(scripts)
  .filter((name) => name.startsWith('bench:'))
  .sort();
let failed = 0;
for (const name of benches) {
  console.log(`\n==== npm run ${name} ====`);
  const result = spawnSync('npm', ['run', '--silent', name], { stdio: 'inherit' });
  if (result.status !== 0) failed++;
}
if (!existsSync('dist/gateway.js')) console.log('(dist/gateway.js is missing: run npm run build)');
process.exit(failed ? 1 : 0);
