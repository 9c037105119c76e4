// `aihub-gateway verify`: replays the whole journal from its first record, independently of
// the checkpoint, and checks the money invariants against the state the gateway would load.
import { join } from 'node:path';
import { readJournal } from './journal.js';
import { applyOp, emptyState, isCustomerLedgerAccount, table, type State } from './state.js';
import { JOURNAL_DIR, loadState } from './store.js';

export interface VerifyReport {
  ok: boolean;
  breaches: string[];
  records: number;
  postings: number;
  accounts: number;
  open_holds: number;
  seq: number;
}

const MAX_BREACHES = 50;

export async function verifyDataDir(data_dir: string): Promise<VerifyReport> {
  const breaches: string[] = [];
  const breach = (message: string) => {
    if (breaches.length < MAX_BREACHES) breaches.push(message);
  };

  // 1. The state a gateway would start from: checkpoint + replay (read only: nothing repaired).
  const { state: loaded } = await loadState(data_dir, { repair: false, now: () => new Date() });

  // 2. An independent replay from the genesis record, checking each posting as it goes.
  const replayed: State = emptyState(loaded.meta.created_at);
  const hold_steps = new Map<string, 'open' | 'resolved'>();
  let records = 0;
  let postings = 0;
  let expected_seq = 1;
  for (const record of readJournal(join(data_dir, JOURNAL_DIR), 0, { repair: false })) {
    if (record.s !== expected_seq) breach(`journal starts at sequence ${record.s}, not ${expected_seq}: earlier history is missing`);
    expected_seq = record.s + 1;
    records++;
    for (const op of record.ops) {
      if (op.o === 'post') {
        postings++;
        const hold = op.p.hold;
        if (hold) {
          const step = hold_steps.get(hold.id);
          if (hold.action === 'open') {
            if (step) breach(`hold ${hold.id} opened twice (record ${record.s})`);
            hold_steps.set(hold.id, 'open');
          } else if (step !== 'open') {
            breach(`hold ${hold.id} ${hold.action}d while ${step ?? 'never opened'} (record ${record.s})`);
          } else {
            hold_steps.set(hold.id, 'resolved');
          }
        }
      }
      try {
        applyOp(replayed, op);
      } catch (error) {
        breach(`record ${record.s}: ${(error as Error).message}`);
      }
    }
    replayed.seq = record.s;
  }

  // 3. The invariants, on the state the gateway would serve.
  let sum = 0;
  for (const [ledger_account, balance] of Object.entries(loaded.balances)) {
    if (!Number.isSafeInteger(balance)) breach(`${ledger_account} holds a non-integer amount ${balance}`);
    sum += balance;
    if (balance < 0 && isCustomerLedgerAccount(ledger_account)) breach(`${ledger_account} is below zero: ${balance}`);
  }
  if (sum !== 0) breach(`the ledger does not sum to zero: ${sum}`);

  const names = new Set([...Object.keys(loaded.balances), ...Object.keys(replayed.balances)]);
  for (const ledger_account of names) {
    const have = loaded.balances[ledger_account] ?? 0;
    const want = replayed.balances[ledger_account] ?? 0;
    if (have !== want) breach(`${ledger_account} is ${have} but its postings replay to ${want}`);
  }
  if (loaded.seq !== replayed.seq) breach(`the state is at record ${loaded.seq} but the journal ends at ${replayed.seq}`);

  const open_holds = table(loaded, 'holds');
  const held_per_account = new Map<string, number>();
  for (const hold of Object.values(open_holds)) {
    if (hold_steps.get(hold.id) !== 'open') breach(`hold ${hold.id} is listed open but its postings say ${hold_steps.get(hold.id) ?? 'never opened'}`);
    held_per_account.set(hold.account_id, (held_per_account.get(hold.account_id) ?? 0) + hold.amount_micros);
  }
  for (const [id, step] of hold_steps) if (step === 'open' && !open_holds[id]) breach(`hold ${id} was opened and never resolved, but is missing from the open holds`);
  for (const [ledger_account, balance] of Object.entries(loaded.balances)) {
    if (!ledger_account.startsWith('hold:')) continue;
    const held = held_per_account.get(ledger_account.slice(5)) ?? 0;
    if (balance !== held) breach(`${ledger_account} is ${balance} but its open holds add up to ${held}`);
  }

  return {
    ok: breaches.length === 0,
    breaches,
    records,
    postings,
    accounts: Object.keys(table(loaded, 'accounts')).length,
    open_holds: Object.keys(open_holds).length,
    seq: loaded.seq,
  };
}
