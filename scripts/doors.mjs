// The one-way doors between the gateway's rooms (docs/ARCHITECTURE.md#doors): every import
// goes to a room further down this list, never up and never sideways. The one exception is a
// type-only import of the composition's types (deps.ts, config.ts): every room is handed
// them, and they name rooms' config schemas, so the door is a type, never code.
// Run by `npm run cycles` after madge's cycle check; exits 1 and lists every wrong door.
import { readFileSync } from 'node:fs';
import madge from 'madge';

const ORDER = [
  ['main.ts'],
  ['cli'],
  ['app.ts'],
  ['deps.ts'],
  ['config.ts'],
  ['web'],
  ['topups'],
  ['payments', 'chat'],
  ['providers', 'llm'],
  ['accounts'],
  ['ledger'],
  ['store'],
  ['http'],
  ['kernel', 'log.ts'],
  ['catalogue'],
  ['util'],
];
const TYPE_DOORS = new Set(['deps.ts', 'config.ts']);
/** The rooms handed those types (the ones main.ts builds with RoomDeps). */
const HANDED_DEPS = new Set(['web', 'topups', 'payments', 'chat', 'providers', 'llm', 'accounts']);
const RANK = new Map(
  ORDER.flatMap((rooms, index) => rooms.map((room) => [room, ORDER.length - index])),
);

// The storage contract's wall (issue #38): the rooms name the store through store/types.ts
// (Store, Tx, the history reads) and never a backend: the JSON-file store and its reads and
// archive, or PostgreSQL's store/pg/. Only store/ itself and main.ts, which opens the store
// the config asks for (and runs the store tools), import a backend, type-only imports too.
const isBackend = (target) =>
  /^store\/(store|reads|archive)\.ts$/.test(target) || target.startsWith('store/pg/');
const OPENS_STORE = new Set(['main.ts']);

const roomOf = (file) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : file);

async function graph(skipTypeImports) {
  const result = await madge('gateway', {
    fileExtensions: ['ts'],
    tsConfig: 'tsconfig.json',
    detectiveOptions: { ts: { skipTypeImports }, tsx: { skipTypeImports } },
  });
  return result.obj();
}

const all = await graph(false);
const values = await graph(true);
const wrong = [];
for (const [file, imports] of Object.entries(all)) {
  const from = roomOf(file);
  for (const target of imports) {
    const to = roomOf(target);
    if (isBackend(target) && from !== 'store' && !OPENS_STORE.has(file)) {
      wrong.push(
        `${file} -> ${target}: a room may not import a storage backend; import the store's types from store/types.ts`,
      );
      continue;
    }
    if (to === from || target.startsWith('../')) continue; // own room; package.json
    const from_rank = RANK.get(from);
    const to_rank = RANK.get(to);
    if (from_rank === undefined || to_rank === undefined) {
      wrong.push(
        `${file} -> ${target}: ${from_rank === undefined ? from : to} is in no room of scripts/doors.mjs`,
      );
      continue;
    }
    if (to_rank < from_rank) continue;
    const type_only = !(values[file] ?? []).includes(target);
    if (type_only && TYPE_DOORS.has(to) && HANDED_DEPS.has(from)) continue;
    wrong.push(
      `${file} -> ${target}: ${from} may not import ${to}${type_only ? ' (type-only)' : ''}`,
    );
  }
}
// No room branches on the backend (issue #38): what differs between the stores (a read run
// before a pass, marks every transaction sees, what other gateways take over) is a method of
// the contract in store/types.ts, named for what the room needs; `isShared` is store/'s word.
for (const file of Object.keys(all))
  if (!file.startsWith('store/') && /\bisShared\s*\(/.test(readFileSync(`gateway/${file}`, 'utf8')))
    wrong.push(
      `${file}: calls isShared(); a room does not branch on the backend: ask the store's contract (store/types.ts) for what it needs`,
    );
if (wrong.length > 0) {
  console.error(
    `✖ ${wrong.length} import(s) against the doors between rooms:\n${wrong.map((line) => `  ${line}`).join('\n')}`,
  );
  process.exit(1);
}
console.log(
  `✔ every import of ${Object.keys(all).length} gateway files goes one way down the rooms`,
);
