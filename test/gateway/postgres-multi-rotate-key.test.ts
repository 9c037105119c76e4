// rotate-key with several gateways on one database (issue #18): the secrets are in the
// database, each eKYC document in the data dir of the gateway that received it. rotate-key on
// one gateway's data dir re-seals the secrets for all and counts the other gateway's document
// as elsewhere; on that gateway's data dir it re-seals the document; then the new key alone
// opens everything, on either gateway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request, runCli } from './helpers.ts';
import {
  PDF,
  download,
  paymentsConfig,
  registerWithWebhookAndKyc,
  startPaymentsGateway,
} from '../support/payments-helpers.ts';
import {
  ADMIN_TOKEN,
  freshDatabase,
  postgresStoreMissing,
  SHARED_ENCRYPTION_KEY,
  startGateways,
  stopAll,
} from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();

test(
  'rotate-key --database-url on two gateways: secrets re-sealed once in the database, each document by its own gateway',
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, { config: paymentsConfig() });
    let ids;
    try {
      ids = await registerWithWebhookAndKyc(gateways[0]!); // the document lands in g1's data dir
    } finally {
      await stopAll(gateways);
    }
    const new_key = randomBytes(32).toString('hex');
    const keys = {
      AIHUB_ENCRYPTION_KEY: new_key,
      AIHUB_ENCRYPTION_OLD_KEYS: SHARED_ENCRYPTION_KEY,
    };
    const rotate = async (data_dir: string) => {
      const rotated = await runCli(
        ['rotate-key', '--data-dir', data_dir, '--database-url', database_url],
        keys,
      );
      assert.equal(rotated.code, 0, rotated.stderr);
      const { accounts_resealed, documents_resealed, documents_elsewhere } = JSON.parse(
        rotated.stdout,
      );
      return { accounts_resealed, documents_resealed, documents_elsewhere };
    };
    assert.deepEqual(await rotate(gateways[1]!.data_dir), {
      accounts_resealed: 1,
      documents_resealed: 0,
      documents_elsewhere: 1,
    });
    assert.deepEqual(await rotate(gateways[0]!.data_dir), {
      accounts_resealed: 0,
      documents_resealed: 1,
      documents_elsewhere: 0,
    });

    // The new key alone: both gateways start (every secret opens), g1 serves the document.
    const again = await Promise.all(
      gateways.map((gateway, i) =>
        startPaymentsGateway(paymentsConfig(), {
          data_dir: gateway.data_dir,
          database_url,
          admin_token: ADMIN_TOKEN,
          env: { AIHUB_GATEWAY_ID: `g${i + 1}`, AIHUB_ENCRYPTION_KEY: new_key },
        }),
      ),
    );
    try {
      assert.ok((await download(again[0]!, ids.account_id, ids.document_id)).equals(PDF));
      const hook = await request(`${again[1]!.url}/api/webhook`, { headers: ids.headers });
      assert.equal(hook.body.data.secret_hint, `${ids.secret.slice(0, 10)}…`);
    } finally {
      await stopAll(again);
    }
  },
);
