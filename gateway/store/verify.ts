// `aihub-gateway verify`: replays the journal independently of the checkpoint and checks the
// money invariants against the state the gateway would load.
//
// By default it starts from the last verified point (`verify.json`): every sealed journal
// segment (all but the last, which the gateway appends to) that a verify has replayed is
// recorded there with its size, its SHA-256 and a chain hash over all of them, together with
// the ledger balances and open holds at its end. The next verify checks that the sealed
// segments are still there with their sizes and that the chain adds up, then replays only
// the segments after them. `--full` replays from the first record and recomputes every
// segment's SHA-256 against the chain (an edit that keeps a segment's size is found only so).
//
// Beside a running gateway, the state is read once (checkpoint + journal up to record N) and
// the independent replay stops at N too: records appended meanwhile are not half-seen.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DurableJsonFile } from './durable-file.js';
import { listSegments, readJournalPlaced } from './journal.js';
import {
  applyOp,
  emptyState,
  isCustomerLedgerAccount,
  table,
  type JournalRecord,
  type Posting,
  type State,
} from './state.js';
import { JOURNAL_DIR, loadState } from './load-state.js';
import { checkPostingTaxes, checkRecordEnd, checkTaxBalances } from './ledger-rules.js';
import type { ReplayCheck } from './replay-check.js';

export interface VerifyReport {
  ok: boolean;
  mode: 'full' | 'incremental';
  /** The replay started after this record (0: from the first). */
  from_seq: number;
  breaches: string[];
  records: number;
  postings: number;
  accounts: number;
  open_holds: number;
  seq: number;
  sealed_segments: number;
}

interface SealedSegment {
  first_seq: number;
  last_seq: number;
  bytes: number;
  sha256: string;
  chain: string;
}

interface VerifiedPoint {
  format: 'aihub-verify';
  version: 1;
  seq: number;
  segments: SealedSegment[];
  balances: Record<string, number>;
  open_holds: string[];
}

export const VERIFY_FILE = 'verify.json';
const MAX_BREACHES = 50;

const chainOf = (previous: string, sha256: string) =>
  createHash('sha256').update(previous).update(sha256).digest('hex');
const sha256File = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

export async function verifyDataDir(
  data_dir: string,
  options: { full?: boolean; checks?: readonly ReplayCheck[] } = {},
): Promise<VerifyReport> {
  const breaches: string[] = [];
  const breach = (message: string) => {
    if (breaches.length < MAX_BREACHES) breaches.push(message);
  };
  const journal_dir = join(data_dir, JOURNAL_DIR);

  // 1. The state a gateway would start from: checkpoint + replay (read only: nothing repaired).
  const { state: loaded } = await loadState(data_dir, { repair: false, now: () => new Date() });

  // 2. Where the independent replay starts: the last verified point, unless --full.
  const start = await startingPoint(data_dir, options.full === true, breach, breaches);
  const { point_file, point, on_disk, sealed, incremental, from_seq } = start;
  let chain = start.chain;

  // 3. The replay from there to the loaded record, checking each posting as it goes.
  const replayed: State = emptyState(loaded.meta.created_at);
  const hold_steps = new Map<string, 'open' | 'resolved'>();
  if (incremental) {
    Object.assign(replayed.balances, point!.balances);
    for (const id of point!.open_holds) hold_steps.set(id, 'open');
  }
  let records = 0;
  let postings = 0;
  let expected_seq = from_seq + 1;
  let current_segment = -1;
  let next_point: VerifiedPoint | null = null;
  for (const { record, place } of readJournalPlaced(journal_dir, from_seq, {
    repair: false,
    up_to_seq: loaded.seq,
  })) {
    if (place.segment !== current_segment) {
      if (current_segment !== -1 && breaches.length === 0)
        ({ chain, point: next_point } = sealBefore(
          { on_disk, sealed, chain, replayed, hold_steps },
          place.segment,
          record.s - 1,
        ));
      current_segment = place.segment;
    }
    if (record.s !== expected_seq)
      breach(
        `journal starts at sequence ${record.s}, not ${expected_seq}: earlier history is missing`,
      );
    expected_seq = record.s + 1;
    records++;
    postings += replayPostings(record, replayed, hold_steps, breach);
    replayed.seq = record.s;
  }
  if (records === 0) replayed.seq = from_seq;

  // 4. The invariants, on the state the gateway would serve.
  checkBooks(loaded, replayed, hold_steps, breach);
  // 5. The rooms' checks (statements, GST documents), over every record from the first (an
  //    incremental replay began later: they read the journal again from its start, up to the
  //    same record).
  runChecks(journal_dir, loaded.seq, options.checks ?? [], breach);
  const open_holds = table(loaded, 'holds');

  // 6. A clean run moves the verified point to the end of the last sealed segment it replayed.
  if (breaches.length === 0 && next_point) await point_file.write(next_point);

  return {
    ok: breaches.length === 0,
    mode: incremental ? 'incremental' : 'full',
    from_seq,
    breaches,
    records,
    postings,
    accounts: Object.keys(table(loaded, 'accounts')).length,
    open_holds: Object.keys(open_holds).length,
    seq: loaded.seq,
    sealed_segments: next_point ? (next_point as VerifiedPoint).segments.length : sealed.length,
  };
}

/** Feeds every record of the journal up to `up_to_seq` to `checks`, then lets them name what they found. */
function runChecks(
  journal_dir: string,
  up_to_seq: number,
  checks: readonly ReplayCheck[],
  breach: (message: string) => void,
): void {
  if (checks.length === 0) return;
  for (const { record } of readJournalPlaced(journal_dir, 0, { repair: false, up_to_seq }))
    for (const check of checks) feedCheck(check, record);
  for (const check of checks) check.finish(breach);
}

/** One journal record's postings and rows of the check's tables, to a room's check. */
function feedCheck(check: ReplayCheck, record: JournalRecord): void {
  for (const op of record.ops) {
    if (op.o === 'post') check.posting(op.p);
    else if (op.o === 'set' && check.tables.includes(op.t)) check.row(op.t, op.id, op.v);
  }
}

/**
 * The verified point the replay starts from, its sealed segments checked against the
 * journal's segments on disk (returned too); or the journal's start, on --full, with no
 * point, or when those checks found a breach.
 */
async function startingPoint(
  data_dir: string,
  full: boolean,
  breach: (message: string) => void,
  breaches: readonly string[],
) {
  const point_file = new DurableJsonFile<VerifiedPoint>(join(data_dir, VERIFY_FILE));
  const point = existsSync(join(data_dir, VERIFY_FILE)) ? await point_file.read() : null;
  const on_disk = listSegments(join(data_dir, JOURNAL_DIR));
  const sealed: SealedSegment[] = point ? checkSealedSegments(point, on_disk, full, breach) : [];
  let chain = sealed.at(-1)?.chain ?? '';
  const incremental = !full && point !== null && breaches.length === 0;
  const from_seq = incremental ? point!.seq : 0;
  if (!incremental) {
    sealed.length = 0;
    chain = '';
  }
  return { point_file, point, on_disk, sealed, chain, incremental, from_seq };
}

/** What the replay has reached: the segments sealed so far, their hash chain, and the state. */
interface Replay {
  on_disk: Array<{ file: string; first_seq: number }>;
  sealed: SealedSegment[];
  chain: string;
  replayed: State;
  hold_steps: Map<string, 'open' | 'resolved'>;
}

/**
 * Every segment before `segment_first_seq` is sealed and now replayed whole: records each one
 * `sealed` lacks (pushed onto it, its hash chained on), and the verified point at `last_seq`.
 */
function sealBefore(
  replay: Replay,
  segment_first_seq: number,
  last_seq: number,
): { chain: string; point: VerifiedPoint } {
  const { on_disk, sealed, replayed, hold_steps } = replay;
  let chain = replay.chain;
  for (const file of on_disk) {
    if (file.first_seq >= segment_first_seq) break;
    if (sealed.some((s) => s.first_seq === file.first_seq)) continue;
    const following = on_disk[on_disk.indexOf(file) + 1]!;
    const sha256 = sha256File(file.file);
    chain = chainOf(chain, sha256);
    sealed.push({
      first_seq: file.first_seq,
      last_seq: following.first_seq - 1,
      bytes: statSync(file.file).size,
      sha256,
      chain,
    });
  }
  const open_holds = [...hold_steps].filter(([, step]) => step === 'open').map(([id]) => id);
  const point: VerifiedPoint = {
    format: 'aihub-verify',
    version: 1,
    seq: last_seq,
    segments: [...sealed],
    balances: { ...replayed.balances },
    open_holds,
  };
  return { chain, point };
}

/**
 * The money invariants of a loaded state against an independent replay of its postings:
 * integer amounts summing to zero, no customer account below zero, every balance what its
 * postings add up to, the open holds those the hold postings left open. Shared by the
 * JSON-file verify and the PostgreSQL one (pg-tools.ts).
 */
export function checkBooks(
  loaded: State,
  replayed: State,
  hold_steps: ReadonlyMap<string, 'open' | 'resolved'>,
  breach: (message: string) => void,
): void {
  let sum = 0;
  for (const [ledger_account, balance] of Object.entries(loaded.balances)) {
    if (!Number.isSafeInteger(balance))
      breach(`${ledger_account} holds a non-integer amount ${balance}`);
    sum += balance;
    if (balance < 0 && isCustomerLedgerAccount(ledger_account))
      breach(`${ledger_account} is below zero: ${balance}`);
  }
  if (sum !== 0) breach(`the ledger does not sum to zero: ${sum}`);
  checkTaxBalances(loaded.balances, breach);

  const names = new Set([...Object.keys(loaded.balances), ...Object.keys(replayed.balances)]);
  for (const ledger_account of names) {
    const have = loaded.balances[ledger_account] ?? 0;
    const want = replayed.balances[ledger_account] ?? 0;
    if (have !== want) breach(`${ledger_account} is ${have} but its postings replay to ${want}`);
  }
  if (loaded.seq !== replayed.seq)
    breach(`the state is at record ${loaded.seq} but the journal ends at ${replayed.seq}`);

  const open_holds = table(loaded, 'holds');
  const held_per_account = new Map<string, number>();
  for (const hold of Object.values(open_holds)) {
    if (hold_steps.get(hold.id) !== 'open')
      breach(
        `hold ${hold.id} is listed open but its postings say ${hold_steps.get(hold.id) ?? 'never opened'}`,
      );
    held_per_account.set(
      hold.account_id,
      (held_per_account.get(hold.account_id) ?? 0) + hold.amount_micros,
    );
  }
  for (const [id, step] of hold_steps)
    if (step === 'open' && !Object.hasOwn(open_holds, id))
      breach(`hold ${id} was opened and never resolved, but is missing from the open holds`);
  for (const [ledger_account, balance] of Object.entries(loaded.balances)) {
    if (!ledger_account.startsWith('hold:')) continue;
    const held = held_per_account.get(ledger_account.slice(5)) ?? 0;
    if (balance !== held)
      breach(`${ledger_account} is ${balance} but its open holds add up to ${held}`);
  }
}

/** The segments verified before are all there, of the same size (and, with `full`, content), their chain unbroken. */
function checkSealedSegments(
  point: VerifiedPoint,
  on_disk: ReturnType<typeof listSegments>,
  full: boolean,
  breach: (message: string) => void,
): SealedSegment[] {
  let chain = '';
  const sealed: SealedSegment[] = [];
  for (const [i, segment] of point.segments.entries()) {
    const file = on_disk[i];
    if (!file || file.first_seq !== segment.first_seq) {
      breach(
        `journal segment starting at record ${segment.first_seq} was verified before and is missing now`,
      );
      continue;
    }
    const bytes = statSync(file.file).size;
    if (bytes !== segment.bytes)
      breach(
        `journal segment ${file.file} was ${segment.bytes} bytes when verified and is ${bytes} now`,
      );
    if (full && sha256File(file.file) !== segment.sha256)
      breach(`journal segment ${file.file} changed since it was verified (SHA-256 differs)`);
    chain = chainOf(chain, segment.sha256);
    if (chain !== segment.chain)
      breach(
        `the checksum chain of verified segments breaks at the segment starting at record ${segment.first_seq}`,
      );
    sealed.push(segment);
  }
  return sealed;
}

/** Applies a record's postings to the replay, checking each hold's steps; returns how many postings it had. */
function replayPostings(
  record: JournalRecord,
  replayed: State,
  hold_steps: Map<string, 'open' | 'resolved'>,
  breach: (message: string) => void,
): number {
  let postings = 0;
  for (const op of record.ops) {
    // Only the ledger matters to this replay: rows are the checkpoint's business.
    if (op.o !== 'post') continue;
    postings++;
    trackHold(hold_steps, op.p, record.s, breach);
    checkPostingTaxes(op.p, record.s, breach);
    try {
      applyOp(replayed, op);
    } catch (error) {
      breach(`record ${record.s}: ${(error as Error).message}`);
    }
  }
  if (postings > 0) checkRecordEnd(replayed.balances, record.s, breach);
  return postings;
}

/** Follows a posting's hold step (open, then capture or void once), naming any other order. */
export function trackHold(
  hold_steps: Map<string, 'open' | 'resolved'>,
  posting: Posting,
  seq: number,
  breach: (message: string) => void,
): void {
  const hold = posting.hold;
  if (!hold) return;
  const step = hold_steps.get(hold.id);
  if (hold.action === 'open') {
    if (step) breach(`hold ${hold.id} opened twice (record ${seq})`);
    hold_steps.set(hold.id, 'open');
  } else if (step !== 'open') {
    breach(`hold ${hold.id} ${hold.action}d while ${step ?? 'never opened'} (record ${seq})`);
  } else {
    hold_steps.set(hold.id, 'resolved');
  }
}
