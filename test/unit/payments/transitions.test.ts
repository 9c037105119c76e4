// The one table of a payment's statuses (engine/transactions.ts TRANSITIONS), transition by
// transition: every allowed move gives the row its status, history, stage and (for a final
// status) its finalization, a final row moved again becomes a new version (revision); every
// other move of the 49 is refused with a TransitionError and leaves nothing changed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  FINAL_STATUSES,
  TRANSITIONS,
  TransitionError,
  canTransition,
  transition,
} from '../../../gateway/payments/engine/transactions.ts';
import {
  TXN_STATUSES,
  type PaymentTxn,
  type TxnStatus,
} from '../../../gateway/payments/engine/tables.ts';
import { fillTxn } from '../../support/history-fill.ts';

const AT = '2026-02-01T10:00:00.000Z';

/** A transaction in `status`, as the engine leaves it there. */
function txnIn(status: TxnStatus): PaymentTxn {
  const base = fillTxn(7, 'acc_t', '2026-01-01T00:00:00.000Z', false);
  const final = FINAL_STATUSES.has(status);
  return {
    ...base,
    status,
    stage: final
      ? 'final'
      : status === 'on_hold'
        ? 'awaiting_operator'
        : status === 'refund_pending'
          ? 'awaiting_consent'
          : 'awaiting_status',
    finalized_at: final ? base.created_at : null,
    checks: { ...base.checks, next_at: final ? null : '2026-01-01T00:00:05.000Z' },
  };
}

/** The table as docs/payments-api.md states it (a second statement of it: a change to one breaks this test). */
const DOCUMENTED: Record<TxnStatus, TxnStatus[]> = {
  pending: ['pending', 'success', 'failed', 'refund_pending', 'on_hold'],
  on_hold: ['on_hold', 'pending', 'success', 'failed', 'refund_pending', 'refunded'],
  refund_pending: ['refunded'],
  success: ['reversed'],
  failed: [],
  refunded: [],
  reversed: [],
};

test('the table holds exactly the documented moves, and every status is in it', () => {
  assert.deepEqual(Object.keys(TRANSITIONS).sort(), [...TXN_STATUSES].sort());
  for (const from of TXN_STATUSES)
    assert.deepEqual([...TRANSITIONS[from]].sort(), [...DOCUMENTED[from]].sort(), from);
  assert.deepEqual([...FINAL_STATUSES].sort(), ['failed', 'refunded', 'reversed', 'success']);
});

for (const from of TXN_STATUSES) {
  for (const to of TXN_STATUSES) {
    const allowed = DOCUMENTED[from].includes(to);
    test(`${from} → ${to}: ${allowed ? 'allowed' : 'refused'}`, () => {
      const txn = txnIn(from);
      const before = structuredClone(txn);
      assert.equal(canTransition(from, to), allowed);
      if (!allowed) {
        assert.throws(() => transition(txn, to, AT, 'try'), TransitionError);
        assert.deepEqual(txn, before, 'a refused move changes nothing');
        return;
      }
      const moved = transition(txn, to, AT, 'why');
      assert.deepEqual(txn, before, 'the row given is not changed in place');
      assert.equal(moved.status, to);
      assert.deepEqual(moved.history.at(-1), { status: to, at: AT, note: 'why' });
      assert.equal(moved.history.length, txn.history.length + 1);
      assert.equal(moved.updated_at, AT);
      if (FINAL_STATUSES.has(to)) {
        assert.equal(moved.stage, 'final');
        assert.equal(moved.finalized_at, AT);
        assert.equal(moved.checks.next_at, null);
        // Only success is final and moves again: its next version is revision 1.
        assert.equal(moved.revision, from === 'success' ? 1 : undefined);
      } else {
        assert.equal(moved.finalized_at, null);
        const stage =
          from === to
            ? txn.stage
            : {
                pending: 'awaiting_status',
                on_hold: 'awaiting_operator',
                refund_pending: 'awaiting_consent',
              }[to as 'pending' | 'on_hold' | 'refund_pending'];
        assert.equal(moved.stage, stage);
        if (moved.stage !== 'awaiting_status') assert.equal(moved.checks.next_at, null);
      }
    });
  }
}

test('a live status waits where the caller says: on hold at the provider keeps its status checks', () => {
  const moved = transition(txnIn('pending'), 'on_hold', AT, 'held at the bank', {
    stage: 'awaiting_status',
  });
  assert.equal(moved.stage, 'awaiting_status');
  assert.equal(moved.checks.next_at, '2026-01-01T00:00:05.000Z');
});
