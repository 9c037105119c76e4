// `npm ci` on a fresh clone installs the coding agents: package-lock.json names every
// platform package of their optional dependencies, also those the registry here does not
// serve (scripts/lock-optional-platforms.mjs adds them; `npm install` drops them again).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';

test('package-lock.json has an entry for every optional platform package (npm ci accepts it)', () => {
  const check = spawnSync(
    process.execPath,
    [resolve(import.meta.dirname, '../../scripts/lock-optional-platforms.mjs'), '--check'],
    { encoding: 'utf8' },
  );
  assert.equal(
    check.status,
    0,
    `npm ci would refuse package-lock.json:\n${check.stderr}run \`node scripts/lock-optional-platforms.mjs\` after npm install`,
  );
});
