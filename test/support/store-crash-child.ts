// A process for the store's crash test: opens a Store with checkpoints taken constantly and
// written in small parts (so a kill lands mid-checkpoint often), and runs 8 writers that
// each print "ack <writer> <n>" once their commit n is durable. The test kills it with
// SIGKILL at a random moment and checks what a restart finds against what was acknowledged.
import { Store } from '../../gateway/store/store.ts';
import { FUNDING_TOPUP, creditWallet, debitWallet } from '../../gateway/ledger/ledger.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const data_dir = process.argv[2]!;
const ROWS = 2_000;
const store = await Store.open(data_dir, {
  history_tags: PAYMENT_HISTORY_TAGS,
  checkpoint_every_records: 20,
  checkpoint_interval_ms: 20,
  checkpoint_part_chars: 1_024,
});
if (!store.get('accounts', 'row-0')) {
  await store.transact((tx) => {
    for (let i = 0; i < ROWS; i++) tx.set('accounts', `row-${i}`, row(`row-${i}`, 'initial'));
    creditWallet(tx, { account_id: 'a', amount_micros: 1e12, from: FUNDING_TOPUP, memo: 'top-up' });
  });
}
process.stdout.write('ready\n');

function row(id: string, name: string) {
  return {
    id,
    email: `${id}@x.io`,
    name,
    status: 'active' as const,
    services: { ai: true, recharge: false, dmt: false, pan: false, bills: false },
    kyc_status: 'none' as const,
    ip_whitelist: [],
    password_hash: null,
    webhook: null,
    created_at: '2026-01-01T00:00:00.000Z',
  };
}

const start = Number(process.argv[3] ?? 0);
for (let w = 0; w < 8; w++) {
  void (async () => {
    for (let n = start; ; n++) {
      await store.transact((tx) => {
        // This writer's rows: rewritten in turn, one in seven deleted, one of the shared rows rewritten too.
        const id = `w${w}-${n % 50}`;
        if (n % 7 === 3) tx.del('accounts', id);
        else tx.set('accounts', id, row(id, String(n)));
        tx.set(
          'accounts',
          `row-${(n * 31 + w) % ROWS}`,
          row(`row-${(n * 31 + w) % ROWS}`, `w${w} n${n}`),
        );
        debitWallet(tx, {
          account_id: 'a',
          amount_micros: 1,
          to: 'revenue:x',
          memo: `w${w} n${n}`,
        });
        tx.history({
          type: 'usage',
          ts: '2026-01-01T00:00:00.000Z',
          account_id: 'a',
          prompt_tokens: 1,
          completion_tokens: 0,
          cost_micros: 1,
        });
      });
      process.stdout.write(`ack ${w} ${n}\n`);
    }
  })();
}
