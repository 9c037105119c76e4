// Which store the gateway opens: AIHUB_DATABASE_URL, --database-url and database_url select
// PostgreSQL (flags win over the environment, which wins over the file); unset, the JSON-file store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../gateway/config.ts';
import { redactUrl } from '../../../gateway/store/pg/keys.ts';
import { StoreUnavailableError } from '../../../gateway/store/store.ts';
import { errorBody, knownError } from '../../../gateway/http/errors.ts';
// The route table adds its protocols' error shapes (Anthropic's on /v1/messages) to errorBody.
import '../../../gateway/chat/routes.ts';
import { tempDir } from '../../support/temp.ts';

test('database_url: unset by default; from the file, the environment and the flag, in that order of precedence; a non-postgres URL is refused', () => {
  assert.equal(loadConfig({ env: {}, flags: {} }).database_url, undefined);
  const file = join(tempDir('aihub-config-'), 'config.json');
  writeFileSync(file, JSON.stringify({ database_url: 'postgres://file/db' }));
  assert.equal(loadConfig({ env: {}, flags: { config: file } }).database_url, 'postgres://file/db');
  assert.equal(
    loadConfig({ env: { AIHUB_DATABASE_URL: 'postgresql://env/db' }, flags: { config: file } })
      .database_url,
    'postgresql://env/db',
  );
  assert.equal(
    loadConfig({
      env: { AIHUB_DATABASE_URL: 'postgres://env/db' },
      flags: { config: file, database_url: 'postgres://flag/db' },
    }).database_url,
    'postgres://flag/db',
  );
  assert.throws(
    () => loadConfig({ env: { AIHUB_DATABASE_URL: 'mysql://x/db' }, flags: {} }),
    (error: Error) =>
      error instanceof ConfigError && /database_url: must be a postgres/.test(error.message),
  );
});

test('a database URL in a message never shows its password', () => {
  assert.equal(
    redactUrl('postgres://aihub:s3cret@db.internal:5432/aihub'),
    'postgres://aihub:***@db.internal:5432/aihub',
  );
  assert.equal(redactUrl('not a url'), 'the database URL');
});

test('StoreUnavailableError is a 503 store_unavailable with Retry-After in the shape of every JSON surface', () => {
  const api = knownError(
    new StoreUnavailableError('the database is unavailable (connect ECONNREFUSED)'),
  );
  assert.ok(api);
  assert.equal(api.status, 503);
  assert.equal(api.headers['retry-after'], '1');
  assert.deepEqual(errorBody('/v1/chat/completions', api), {
    error: { message: api.message, type: 'api_error', param: null, code: 'store_unavailable' },
  });
  assert.deepEqual(errorBody('/v1/messages', api), {
    type: 'error',
    error: { type: 'api_error', message: api.message },
  });
  assert.deepEqual(errorBody('/api/recharge', api), {
    status: false,
    message: api.message,
    error: { code: 'store_unavailable' },
  });
  assert.doesNotMatch(api.message, /ECONNREFUSED/, 'the cause stays in the log, not in the answer');
});
