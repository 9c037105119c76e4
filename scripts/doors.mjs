// The one-way doors between the gateway's rooms (docs/ARCHITECTURE.md#doors): every import
// goes to a room further down this list, never up and never sideways. The one exception is a
// type-only import of the composition's types (deps.ts, config.ts): every room is handed
// them, and they name rooms' config schemas, so the door is a type, never code.
// Run by `npm run cycles` after madge's cycle check; exits 1 and lists every wrong door.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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
  ['telemetry'],
  ['catalogue'],
  ['util'],
];
const TYPE_DOORS = new Set(['deps.ts', 'config.ts']);
/** The rooms handed those types (the ones main.ts builds with RoomDeps). */
const HANDED_DEPS = new Set(['web', 'topups', 'payments', 'chat', 'providers', 'llm', 'accounts']);
const RANK = new Map(
  ORDER.flatMap((rooms, index) => rooms.map((room) => [room, ORDER.length - index])),
);

// The storage contract's wall (issue #38): the rooms name the store through its contract
// (STORE_CONTRACT: store/types.ts's Store, Tx and history reads, the rows of store/state.ts,
// and the small shared parts beside them) and never a backend: the JSON-file store and its
// journal, reads and archive, or PostgreSQL's store/pg/. Type-only imports count too. main.ts
// opens the store the config asks for (and runs the store tools) through the one factory,
// store/open.ts, which alone imports the backends' entry points (BACKEND_ENTRIES).
const STORE_CONTRACT = new Set([
  'store/types.ts',
  'store/state.ts',
  'store/turns.ts',
  'store/snapshot.ts',
  'store/replay-check.ts',
  'store/fs-durable.ts',
  'store/history-tags.ts',
]);
/** What main.ts may import of store/ beyond the contract: the factory and the data dir's key file. */
const MAIN_STORE_DOORS = new Set(['store/open.ts', 'store/encryption-key.ts']);
const isBackend = (target) => target.startsWith('store/') && !STORE_CONTRACT.has(target);
const BACKEND_ENTRIES = new Set(['store/store.ts', 'store/pg/store.ts']);
const FACTORY = 'store/open.ts';

// A payment service's wall (issue #38): a service's folder (a folder of payments/ with a
// service.ts, listed in payments/services.ts) is imported only from inside payments/; the
// other rooms know the services through `Payments.services`, type-only imports too.
const SERVICE_FOLDERS = readdirSync('gateway/payments', { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => `payments/${entry.name}/`)
  .filter((folder) => existsSync(`gateway/${folder}service.ts`));
const isServiceFolder = (target) => SERVICE_FOLDERS.some((folder) => target.startsWith(folder));

// A payment service is a folder (issue #38): payments/<service>/ imports no other service's
// folder, only what the services share: engine/ (the payment engine), identity/ (each
// identity number's rule) and shared/ (steps several services take), and the room's own
// files (payments/*.ts, which compose the services). The shared folders import no service.
const PAYMENTS_SHARED = new Set(['engine', 'identity', 'shared']);
const paymentsFolder = (file) => /^payments\/([^/]+)\//.exec(file)?.[1] ?? null;
function crossesServices(file, target) {
  const from = paymentsFolder(file);
  const to = paymentsFolder(target);
  if (from === null || to === null || from === to || PAYMENTS_SHARED.has(to)) return null;
  return PAYMENTS_SHARED.has(from)
    ? `${file} -> ${target}: payments/${from}/ is shared by the services and may not import one (payments/${to}/)`
    : `${file} -> ${target}: payments/${from}/ may not import another service's folder (payments/${to}/), only engine/, identity/ or shared/`;
}

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
    if (isServiceFolder(target) && from !== 'payments') {
      wrong.push(
        `${file} -> ${target}: only the payments room imports a payment service's folder; read the list through Payments.services`,
      );
      continue;
    }
    if (isBackend(target) && from !== 'store') {
      if (file === 'main.ts' && MAIN_STORE_DOORS.has(target)) continue;
      wrong.push(
        `${file} -> ${target}: a room may not import a storage backend; import the store's types from store/types.ts (main.ts opens the store through store/open.ts)`,
      );
      continue;
    }
    if (BACKEND_ENTRIES.has(target) && file !== FACTORY) {
      wrong.push(`${file} -> ${target}: only the factory (${FACTORY}) opens a storage backend`);
      continue;
    }
    const crossing = crossesServices(file, target);
    if (crossing) {
      wrong.push(crossing);
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
// A protocol is a module (issue #38): its folder chat/protocols/<name>/ is imported only from
// inside itself and by the one list that registers the protocols (chat/protocols/index.ts);
// the rest of the gateway reaches it through the Protocol and ProtocolRoutes interfaces, and
// no protocol imports another's folder (shared helpers sit in chat/protocols/*.ts).
const PROTOCOL_LIST = 'chat/protocols/index.ts';
const protocolOf = (file) => /^chat\/protocols\/([^/]+)\//.exec(file)?.[1] ?? null;
for (const [file, imports] of Object.entries(all))
  for (const target of imports) {
    const owner = protocolOf(target);
    if (owner && file !== PROTOCOL_LIST && protocolOf(file) !== owner)
      wrong.push(
        `${file} -> ${target}: only chat/protocols/${owner}/ and ${PROTOCOL_LIST} may import the ${owner} protocol's folder`,
      );
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
