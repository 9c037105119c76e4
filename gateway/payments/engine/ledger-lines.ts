// What the tax documents read from one posting, from its entries alone (issue #35): the
// movement of the ledger accounts a statement summarizes, for the account the posting belongs
// to (`posting.account_id`):
//   commission:<service>, override:<service>   the gross earned (minus what they moved);
//   tds:194h                                     the TDS withheld from it (what it moved);
//   revenue:<service> beside a GST account       a fee's taxable value;
//   gst:cgst, gst:sgst | gst:utgst, gst:igst     the fee's GST.
// A reversal is a posting too: it moves the same accounts the other way, so the same sums
// give negative lines in the period of the reversal (the commission and its TDS taken back,
// the fee and its GST given back). Nothing is taken from a posting's meta but descriptions
// (slab, rate, place of supply): an amount is always what the ledger moved.
//
// `ledgerMovements` is the reusable read: the movements of chosen ledger accounts in one
// account's postings over a period, through the store's index of its wallet postings.
import type { ReadSnapshot, Store } from '../../store/types.js';
import type { Posting } from '../../store/state.js';
import type { Pacer } from '../../store/turns.js';
import { TDS_ACCOUNT } from './settle.js';

export const GST_ACCOUNTS = ['gst:cgst', 'gst:sgst', 'gst:utgst', 'gst:igst'] as const;

/** The micro-unit movements of one posting that a statement shows. */
export interface PostingFigures {
  /** commission:* and override:* paid out (minus what they moved): negative on a reversal. */
  gross_micros: number;
  tds_micros: number;
  /** The service of the commission or override account it moved (null: none). */
  earning_service: string | null;
  /** It moved an override:* account (a distributor's override), not a commission:*. */
  override: boolean;
  /** The fee's parts: revenue:* (in a posting that carries GST) and each GST account. */
  taxable_micros: number;
  cgst_micros: number;
  /** SGST or UTGST. */
  sgst_micros: number;
  igst_micros: number;
  /** The revenue account's service (null: none). */
  fee_service: string | null;
  /** It is an earning (moved commission:*, override:* or tds:194h). */
  earning: boolean;
  /** It is a fee with GST (moved a GST account, or a revenue account with a GST rate named). */
  fee: boolean;
}

export function postingFigures(posting: Posting): PostingFigures {
  const f: PostingFigures = {
    gross_micros: 0,
    tds_micros: 0,
    earning_service: null,
    override: false,
    taxable_micros: 0,
    cgst_micros: 0,
    sgst_micros: 0,
    igst_micros: 0,
    fee_service: null,
    earning: false,
    fee: false,
  };
  let revenue = 0;
  let gst_moved = false;
  for (const [account, micros] of posting.entries) {
    if (account.startsWith('commission:') || account.startsWith('override:')) {
      f.gross_micros -= micros;
      f.earning = true;
      f.override ||= account.startsWith('override:');
      f.earning_service ??= account.slice(account.indexOf(':') + 1);
    } else if (account === TDS_ACCOUNT) {
      f.tds_micros += micros;
      f.earning = true;
    } else if (account.startsWith('revenue:')) {
      revenue += micros;
      f.fee_service ??= account.slice('revenue:'.length);
    } else if (account === 'gst:cgst') {
      f.cgst_micros += micros;
      gst_moved = true;
    } else if (account === 'gst:sgst' || account === 'gst:utgst') {
      f.sgst_micros += micros;
      gst_moved = true;
    } else if (account === 'gst:igst') {
      f.igst_micros += micros;
      gst_moved = true;
    }
  }
  // A fee at a GST rate of 0 moves no GST account: its posting names the rate.
  f.fee = gst_moved || (f.fee_service !== null && posting.meta?.gst_rate_bp !== undefined);
  if (f.fee) f.taxable_micros = revenue;
  return f;
}

/** The posting is part of a statement: an earning, its TDS, or a fee with GST. */
export function onStatement(posting: Posting): boolean {
  const f = postingFigures(posting);
  return f.earning || f.fee;
}

/** The posting is part of a TDS statement: an earning or its TDS. */
export function onTdsStatement(posting: Posting): boolean {
  return postingFigures(posting).earning;
}

/**
 * What the postings of `account_id` (null: of every account), its wallet's as the store
 * indexes them, between `from_ms` and `to_ms` (inclusive; absent: unbounded) moved of each
 * ledger account `wanted` picks, in micro-units, over the postings `postings` keeps (default:
 * every one that moved a wanted account): the read behind "what did this account's business
 * move of X in period P" (a statement's, an invoice's, a report's totals). Costs the account's
 * postings of the period, walked in turns of `pacer`.
 */
export async function ledgerMovements(
  store: Store,
  select: {
    account_id: string | null;
    from_ms?: number | undefined;
    to_ms?: number | undefined;
    wanted: (ledger_account: string) => boolean;
    postings?: (posting: Posting) => boolean;
    as_of?: ReadSnapshot | undefined;
  },
  pacer: Pacer,
): Promise<Map<string, number>> {
  const moved = new Map<string, number>();
  const keep = select.postings ?? (() => true);
  const match = (posting: Posting) =>
    posting.entries.some(([account]) => select.wanted(account)) && keep(posting);
  for await (const batch of store.reads.walletLines(
    {
      account_id: select.account_id,
      from_ms: select.from_ms,
      to_ms: select.to_ms,
      match,
      as_of: select.as_of,
    },
    { offset: 0, limit: Number.MAX_SAFE_INTEGER },
    'asc',
    pacer,
  ))
    for (const line of batch)
      for (const [account, micros] of line.posting.entries)
        if (select.wanted(account)) moved.set(account, (moved.get(account) ?? 0) + micros);
  return moved;
}
