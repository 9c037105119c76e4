// `aihub-gateway verify`'s check of the statements (issue #35), on either store: fed every
// posting in commit order, it computes each account's statements of each month (IST) with
// the gateway's own fold (`StatementFold`, from the postings a statement reads: those of the
// account's wallet, as the store indexes them), and re-adds, independently and from every
// posting, what each account's postings moved of the ledger accounts the statements summarize:
//   commission:* and override:*   the gross (a statement's gross is minus their movement);
//   tds:194h                      the TDS;
//   gst:cgst, gst:sgst|utgst, gst:igst   the GST of the fees.
// A statement whose totals differ from its account's movements in the month is named, and so
// is a movement of those accounts by a posting of no account (it is on nobody's statement), and
// a commission or override whose own record (its meta: the figures its transaction and
// receipt show) disagrees with what it moved.
import type { Posting } from '../../store/state.js';
import type { ReplayCheck } from '../../store/replay-check.js';
import { microsToUnits } from '../../util/money.js';
import { TDS_ACCOUNT } from '../engine/settle.js';
import { postingFigures } from '../engine/ledger-lines.js';
import { StatementFold, monthOf } from './statements.js';

interface Moved {
  gross: number;
  tds: number;
  cgst: number;
  sgst: number;
  igst: number;
}

const NO_ACCOUNT = '';
const units = (micros: number) => microsToUnits(micros).toFixed(2);

/** What a posting moved of the statements' ledger accounts, straight from its entries. */
function readd(into: Moved, posting: Posting): boolean {
  let any = false;
  for (const [account, micros] of posting.entries) {
    if (account.startsWith('commission:') || account.startsWith('override:')) into.gross -= micros;
    else if (account === TDS_ACCOUNT) into.tds += micros;
    else if (account === 'gst:cgst') into.cgst += micros;
    else if (account === 'gst:sgst' || account === 'gst:utgst') into.sgst += micros;
    else if (account === 'gst:igst') into.igst += micros;
    else continue;
    any = true;
  }
  return any;
}

export function statementsCheck(): ReplayCheck {
  const statements = new Map<string, { commission: StatementFold; tds: StatementFold }>();
  const moved = new Map<string, Moved>();
  const drift: string[] = [];
  const wants = { commission: StatementFold.wants('commission'), tds: StatementFold.wants('tds') };
  return {
    tables: [],
    row(): void {},
    posting(posting: Posting): void {
      const month = monthOf(posting.ts);
      const owner = posting.account_id ?? NO_ACCOUNT;
      const key = `${owner}\u0000${month}`;
      const sums = moved.get(key) ?? { gross: 0, tds: 0, cgst: 0, sgst: 0, igst: 0 };
      if (readd(sums, posting)) moved.set(key, sums);
      // The statement reads the account's wallet postings (the store's index of them).
      const wallet = `wallet:${owner}`;
      if (owner === NO_ACCOUNT || !posting.entries.some(([account]) => account === wallet)) return;
      if (!wants.commission(posting)) return;
      let folds = statements.get(key);
      if (!folds)
        statements.set(
          key,
          (folds = {
            commission: new StatementFold('commission', [month], 0),
            tds: new StatementFold('tds', [month], 0),
          }),
        );
      folds.commission.add(posting);
      if (wants.tds(posting)) folds.tds.add(posting);
      const meta = posting.meta;
      if (
        (meta?.kind === 'commission' || meta?.kind === 'override') &&
        typeof meta.gross_micros === 'number' &&
        typeof meta.tds_micros === 'number'
      ) {
        const f = postingFigures(posting);
        if (f.gross_micros !== meta.gross_micros || f.tds_micros !== meta.tds_micros)
          drift.push(
            `posting ${posting.id} of ${owner} (${meta.kind} of ${posting.ref ?? 'no transaction'}) says gross ${units(meta.gross_micros)}, TDS ${units(meta.tds_micros)}, but moved gross ${units(f.gross_micros)}, TDS ${units(f.tds_micros)}`,
          );
      }
    },

    finish(breach: (message: string) => void): void {
      for (const message of drift) breach(message);
      const keys = new Set([...statements.keys(), ...moved.keys()]);
      for (const key of [...keys].sort()) {
        const [account_id, month] = key.split('\u0000') as [string, string];
        const m = moved.get(key) ?? { gross: 0, tds: 0, cgst: 0, sgst: 0, igst: 0 };
        if (account_id === NO_ACCOUNT) {
          for (const [name, micros] of Object.entries(m))
            if (micros !== 0)
              breach(
                `postings of no account moved the statements' ${name} by ${units(micros)} in ${month}: on no statement`,
              );
          continue;
        }
        compareMonth(account_id, month, statements.get(key), m, breach);
      }
    },
  };
}

/** One account's statements of one month against what its postings moved. */
function compareMonth(
  account_id: string,
  month: string,
  folds: { commission: StatementFold; tds: StatementFold } | undefined,
  m: Moved,
  breach: (message: string) => void,
): void {
  const c = folds?.commission.totals;
  const t = folds?.tds.totals;
  const compare = (what: string, shown: number, ledger: number, accounts: string) => {
    if (shown !== ledger)
      breach(
        `${what} of ${account_id} for ${month}: ${units(shown)}, but its postings moved ${accounts} by ${units(ledger)}`,
      );
  };
  compare('commission statement gross', c?.gross ?? 0, m.gross, 'commission:*/override:*');
  compare('commission statement TDS', c?.tds ?? 0, m.tds, TDS_ACCOUNT);
  compare('TDS statement TDS', t?.tds ?? 0, m.tds, TDS_ACCOUNT);
  compare('TDS statement gross', t?.gross ?? 0, m.gross, 'commission:*/override:*');
  compare('commission statement CGST', c?.cgst ?? 0, m.cgst, 'gst:cgst');
  compare('commission statement SGST/UTGST', c?.sgst ?? 0, m.sgst, 'gst:sgst/gst:utgst');
  compare('commission statement IGST', c?.igst ?? 0, m.igst, 'gst:igst');
}
