// A process for the history crash test: heavy history writes (finalized payment transactions
// with their postings and API logs, in commits of 20), checkpoints and index manifests taken
// constantly, small journal segments so that rotations happen too. Each writer prints
// "ack <txn id>" once the commit holding it is durable; the test kills it with SIGKILL at a
// random moment and checks what a restart finds against what was acknowledged.
import { Store } from '../../gateway/store/store.ts';
import { FUNDING_TOPUP, captureHold, creditWallet, openHold } from '../../gateway/ledger/ledger.ts';
import { fillAccount, fillTxn } from './history-fill.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const data_dir = process.argv[2]!;
const base = Number(process.argv[3] ?? 0);
const ACCOUNTS = 7;
const store = await Store.open(data_dir, {
  history_tags: PAYMENT_HISTORY_TAGS,
  checkpoint_every_records: 30,
  checkpoint_interval_ms: 50,
  checkpoint_part_chars: 4_096,
  segment_bytes: 256 * 1024,
});
if (store.state.seq === 0) {
  await store.transact((tx) => {
    for (let a = 0; a < ACCOUNTS; a++)
      creditWallet(tx, {
        account_id: fillAccount(a),
        amount_micros: 1e15,
        from: FUNDING_TOPUP,
        memo: 'opening funds',
      });
  });
}
process.stdout.write('ready\n');

for (let w = 0; w < 4; w++) {
  void (async () => {
    for (let n = 0; ; n++) {
      const ids: string[] = [];
      await store.transact((tx) => {
        for (let k = 0; k < 20; k++) {
          const i = base + (n * 4 + w) * 20 + k;
          const account_id = fillAccount(i % ACCOUNTS);
          const at = new Date(Date.parse('2026-03-01T00:00:00Z') + i * 1000).toISOString();
          const txn = fillTxn(i, account_id, at, false);
          const hold = openHold(tx, {
            account_id,
            amount_micros: txn.amount_micros,
            purpose: `recharge ${txn.id}`,
            ref: txn.id,
          });
          captureHold(tx, hold.id, {
            amount_micros: txn.amount_micros,
            to: txn.pay_to,
            memo: `recharge ${txn.id}`,
          });
          creditWallet(tx, {
            account_id,
            amount_micros: txn.commission_micros,
            from: 'commission:recharge',
            memo: `recharge commission ${txn.id}`,
            ref: txn.id,
          });
          tx.set('payment_txns', txn.id, txn);
          tx.history({
            type: 'api_log',
            ts: at,
            direction: 'inbound',
            account_id,
            method: 'POST',
            path: '/api/recharge',
            status: 200,
            latency_ms: 1,
            txn_id: txn.id,
          });
          ids.push(txn.id);
        }
      });
      process.stdout.write(`ack ${ids.join(' ')}\n`);
    }
  })();
}
