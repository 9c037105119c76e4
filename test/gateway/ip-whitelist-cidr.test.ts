// Issue #25, item 10: the IP whitelist took `10.9.9.9/1` (stored as typed, meaning 0.0.0.0/1,
// half the internet) and `127.0.0.1/0` (everyone). Entries are now normalized (IPv6 compressed
// and lower case, IPv4-mapped IPv6 as IPv4, /32 and /128 as the bare address); a CIDR with
// host bits set is refused naming the network it would mean; a range wider than
// payments.ip_whitelist.min_prefix_ipv4/_ipv6 (/8 and /32 by default) is refused unless the
// request says `force: true` (the console: a checkbox). The admin API and the console alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DashboardClient } from '../support/dashboard-client.ts';
import { onboard, paymentsConfig, startPaymentsGateway } from '../support/payments-helpers.ts';
import { admin, request } from './helpers.ts';

test('item 10: CIDRs with host bits or wider than the minimum prefix are refused (unless forced); entries are stored normalized and bind as stored', async () => {
  const gw = await startPaymentsGateway(); // the default minimum prefixes: /8 and /32
  try {
    const api = admin(gw);
    const { account_id, headers } = await onboard(gw, 100, { recharge: true });
    const put = (ips: string[], force?: boolean) =>
      api.put(`/admin/accounts/${account_id}/ip-whitelist`, {
        ips,
        ...(force === undefined ? {} : { force }),
      });

    const host_bits = await put(['203.0.113.7', '10.9.9.9/1']);
    assert.equal(host_bits.status, 400, JSON.stringify(host_bits.body));
    assert.equal(host_bits.body.error.param, 'ips.1');
    assert.match(host_bits.body.error.message, /host bits.*0\.0\.0\.0\/1/);
    const everyone = await put(['127.0.0.1/0']);
    assert.equal(everyone.status, 400);
    assert.match(everyone.body.error.message, /host bits.*0\.0\.0\.0\/0/);
    for (const wide of ['0.0.0.0/0', '0.0.0.0/1', '::/0', '2001::/16']) {
      const refused = await put([wide]);
      assert.equal(refused.status, 400, wide);
      assert.match(refused.body.error.message, /wider than \/(8|32).*force/, wide);
    }
    assert.equal((await put(['2001:db8:1::1/48'])).status, 400, 'IPv6 host bits too');
    // Nothing of the refused lists was stored: the account still has no whitelist.
    assert.deepEqual((await api.get(`/admin/accounts/${account_id}`)).body.ip_whitelist, []);

    const stored = await put([
      '10.0.0.0/8',
      '2001:DB8:0:0::/32',
      '::ffff:127.0.0.1/128',
      '203.0.113.7/32',
      '127.0.0.1',
    ]);
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    assert.deepEqual(stored.body.ip_whitelist, [
      '10.0.0.0/8',
      '2001:db8::/32',
      '127.0.0.1',
      '203.0.113.7',
    ]);
    assert.equal(
      (await request(`${gw.url}/api/wallet/balance`, { headers })).status,
      200,
      'the IPv4-mapped entry, stored as 127.0.0.1, lets this client in',
    );

    const forced = await put(['0.0.0.0/0'], true);
    assert.equal(forced.status, 200, 'an operator who means it says force');
    assert.deepEqual(forced.body.ip_whitelist, ['0.0.0.0/0']);
    const audit = await api.get(
      `/admin/audit?account_id=${account_id}&action=account.ip_whitelist`,
    );
    assert.ok(audit.body.data.length >= 2);
  } finally {
    await gw.stop();
  }
});

test('item 10: the admin console refuses host bits and too-wide ranges with the reason, and takes a wide range when forced', async () => {
  const gw = await startPaymentsGateway(paymentsConfig({ ip_whitelist: { min_prefix_ipv4: 16 } }));
  try {
    const { account_id } = await onboard(gw, 10);
    const console_ = new DashboardClient(gw.url);
    assert.equal((await console_.post('/admin/login', { token: gw.admin_token })).status, 303);
    const page = `/admin/console/accounts/${account_id}`;
    const save = (fields: Record<string, string>) =>
      console_.post(`${page}/ip-whitelist`, fields, { page });
    const bits = await save({ ips: '10.9.9.9/1' });
    assert.equal(bits.status, 400);
    assert.match(bits.text, /host bits/);
    const wide = await save({ ips: '10.0.0.0/8' });
    assert.equal(wide.status, 400, "wider than this gateway's /16 minimum");
    assert.match(wide.text, /wider than \/16/);
    assert.equal((await save({ ips: '10.0.0.0/8', force: 'on' })).status, 303);
    assert.deepEqual((await admin(gw).get(`/admin/accounts/${account_id}`)).body.ip_whitelist, [
      '10.0.0.0/8',
    ]);
  } finally {
    await gw.stop();
  }
});
