// A process for the idempotency crash test: the real payment engine on a store whose
// checkpoints and index manifests are written all the time, in small parts, with small
// journal segments. Four writers submit keyed recharges (each key once, some retried at
// once) and print "ack <key> <answer body as JSON>" once the engine answered (its commit is
// durable by then). The test kills it with SIGKILL at a random moment: between any two
// commits, in the middle of a checkpoint or a manifest.
import { Store } from '../../gateway/store/store.ts';
import { FUNDING_TOPUP, creditWallet } from '../../gateway/ledger/ledger.ts';
import { keyedEngine, CRASH_ACCOUNT, keyedIntent } from './idempotency-crash.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const data_dir = process.argv[2]!;
const round = Number(process.argv[3] ?? 0);
const store = await Store.open(data_dir, {
  history_tags: PAYMENT_HISTORY_TAGS,
  checkpoint_every_records: 20,
  checkpoint_interval_ms: 20,
  checkpoint_part_chars: 1_024,
  segment_bytes: 64 * 1024,
});
if (!store.get('accounts', CRASH_ACCOUNT.id)) {
  await store.transact((tx) => {
    tx.set('accounts', CRASH_ACCOUNT.id, CRASH_ACCOUNT);
    creditWallet(tx, {
      account_id: CRASH_ACCOUNT.id,
      amount_micros: 1e15,
      from: FUNDING_TOPUP,
      memo: 'opening funds',
    });
  });
}
if (process.argv[4] === 'orphan') {
  // One keyed request whose provider never answers: killed while it has the transaction.
  const engine = keyedEngine(store, { hang: () => process.stdout.write('calling\n') });
  void engine.submit(keyedIntent('orphan'));
} else runWriters();

function runWriters(): void {
  const engine = keyedEngine(store);
  process.stdout.write('ready\n');

  for (let w = 0; w < 4; w++) {
    void (async () => {
      for (let n = 0; ; n++) {
        const key = `r${round}-w${w}-${n}`;
        const answer = await engine.submit(keyedIntent(key));
        process.stdout.write(`ack ${key} ${JSON.stringify(answer.body)}\n`);
        if (n % 5 === 4) {
          // A client's retry at once: the same answer, from the live record or from history.
          const earlier = `r${round}-w${w}-${n - 2}`;
          const again = await engine.submit(keyedIntent(earlier));
          process.stdout.write(`ack ${earlier} ${JSON.stringify(again.body)}\n`);
        }
      }
    })();
  }
}
