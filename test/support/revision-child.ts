// A process for the transaction-revision test: it opens a store whose manifest is older than
// what it then commits (a few successes finalized again as reversed), prints "done" once
// those commits are durable, and waits to be killed with SIGKILL: the restart must index the
// revisions from the journal tail, beside what the manifest says.
import { Store } from '../../gateway/store/store.ts';
import { reviseTxns } from './revisions.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const data_dir = process.argv[2]!;
const ids = process.argv.slice(3);
const store = await Store.open(data_dir, {
  history_tags: PAYMENT_HISTORY_TAGS,
  checkpoint_interval_ms: 3_600_000,
  checkpoint_every_records: 1_000_000,
});
await reviseTxns(store, ids);
process.stdout.write('done\n');
setInterval(() => {}, 1_000);
