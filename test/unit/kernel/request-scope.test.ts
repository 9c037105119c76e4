// The request scope without a standing AsyncLocalStorage (issue #40): the Express lane's
// implicit scope is visible in its continuations while the request is open and switched off
// once no scoped request is in flight (on Node 20 an enabled AsyncLocalStorage puts an init
// hook on every promise of the process); the lean lane's explicit scope is what a store
// refusal is answered with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { ScopedStorage } from '../../../gateway/kernel/scoped-storage.ts';
import {
  inRequestScope,
  newRequestScope,
  requestScope,
  scopedRequests,
} from '../../../gateway/kernel/request-scope.ts';
import { StoreOutcomeUnknownError, StoreUnavailableError } from '../../../gateway/kernel/errors.ts';
import { storeUnavailable } from '../../../gateway/http/errors.ts';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Whether a promise made now carries an async-local value's slot: on Node 20 an enabled
 * AsyncLocalStorage's init hook gives every new promise a `kResourceStore` property (the
 * cost the scoped storage avoids; node:test's own hooks add async ids either way). Node 24's
 * AsyncContextFrame tags none.
 */
const promisesTagged = () =>
  Object.getOwnPropertySymbols(Promise.resolve()).some(
    (symbol) => symbol.description === 'kResourceStore',
  );
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

test('a scoped storage: its value across awaits, each run its own, undefined once every run has left', async () => {
  const storage = new ScopedStorage<string>();
  assert.equal(storage.get(), undefined);
  const seen: Array<string | undefined> = [];
  let late: Promise<string | undefined> | null = null;
  const a = storage.run('a', async () => {
    await tick();
    seen.push(storage.get());
    // A continuation that outlives its run (fire-and-forget work after the answer).
    late = new Promise((resolve) => setTimeout(() => resolve(storage.get()), 30));
    return storage.get();
  });
  const b = storage.run('b', async () => {
    await tick();
    await tick();
    seen.push(storage.get());
    return storage.get();
  });
  assert.equal(storage.opened, 2);
  assert.deepEqual(await Promise.all([a, b]), ['a', 'b']);
  assert.deepEqual(seen, ['a', 'b']);
  await tick();
  assert.equal(storage.opened, 0, 'runs left when their promises settled');
  assert.equal(await late!, undefined, 'read as not known once no run is open');
  // A run that throws synchronously leaves too.
  assert.throws(() =>
    storage.run('c', () => {
      throw new Error('boom');
    }),
  );
  assert.equal(storage.opened, 0);
  // exit: outside the run's value, and the storage is not left switched on by it.
  storage.run(
    'd',
    () => storage.exit(() => assert.equal(storage.get(), undefined)),
    (leave) => setImmediate(leave),
  );
  await tick();
  assert.equal(storage.opened, 0);
});

test(
  'the async hooks are on only while a scoped request is in flight',
  { skip: NODE_MAJOR >= 24 && 'no promise hooks for AsyncLocalStorage here' },
  async () => {
    assert.equal(promisesTagged(), false, 'nothing scoped yet: promises are plain');
    const res = new EventEmitter() as unknown as ServerResponse;
    const tagged_inside = inRequestScope(() => promisesTagged(), { until: res });
    assert.equal(tagged_inside, true, 'the probe sees the hooks while a request is scoped');
    assert.equal(scopedRequests(), 1);
    assert.equal(promisesTagged(), true, 'process-wide while it is open');
    res.emit('close');
    assert.equal(scopedRequests(), 0);
    assert.equal(promisesTagged(), false, 'off again once its response closed');
  },
);

test("an Express request's scope is implicit until its response closes, and counts its commits", async () => {
  const res = new EventEmitter() as unknown as ServerResponse;
  const scope = newRequestScope();
  let read_later: Promise<unknown> | null = null;
  inRequestScope(
    () => {
      read_later = (async () => {
        await tick();
        requestScope()!.committed++; // the store acknowledging a commit of this request
        return requestScope();
      })();
    },
    { scope, until: res },
  );
  assert.equal(await read_later!, scope);
  assert.equal(scope.committed, 1);
  assert.equal(scopedRequests(), 1, 'open until the response closes');
  res.emit('close');
  res.emit('close'); // a second close changes nothing
  assert.equal(scopedRequests(), 0);
});

test('a store refusal is answered with the answering request\'s scope: "nothing was changed" only when it committed nothing', () => {
  const lean = newRequestScope();
  // Raised outside any implicit scope (the lean lane, or a read shared by several requests).
  const down = new StoreUnavailableError('down');
  assert.equal(down.scope, undefined);
  assert.match(storeUnavailable(down, lean).message, /nothing was changed/);
  lean.committed++; // its hold committed before the settlement was refused
  const partly = storeUnavailable(down, lean);
  assert.equal(partly.code, 'store_unavailable');
  assert.doesNotMatch(partly.message, /nothing was changed/);
  assert.match(partly.message, /not completed/);
  // No scope at all: not known, so not said.
  assert.doesNotMatch(storeUnavailable(down).message, /nothing was changed/);
  // The answering request's scope wins over the one the error was raised in.
  const raised_in = newRequestScope();
  const shared = new StoreUnavailableError('down', { scope: raised_in });
  assert.doesNotMatch(storeUnavailable(shared, lean).message, /nothing was changed/);
  assert.match(storeUnavailable(shared).message, /nothing was changed/);
  // A commit whose outcome is unknown never says so.
  const unknown = storeUnavailable(new StoreOutcomeUnknownError('lost'), newRequestScope());
  assert.equal(unknown.code, 'store_outcome_unknown');
  assert.doesNotMatch(unknown.message, /nothing was changed/);
});
