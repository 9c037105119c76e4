// The live SMS sender of remitter OTPs (providers/sms.ts) against a scripted SMS gateway on
// loopback: the request it sends (URL, auth header from the environment, fields with the OTP),
// and what a customer sees when the SMS gateway fails, refuses or does not answer in time:
// 502 sms_failed, the OTP cancelled, a retry allowed at once, nothing charged, and the OTP in
// no answer, no log line and no file of the data dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { request, type Gateway } from './helpers.ts';
import { json, startUpstream, type Seen } from '../support/payments-upstream.ts';
import {
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
} from '../support/payments-helpers.ts';

const SMS_TOKEN = 'sms-secret-token-5f3a9c';
/**
 * The sender's timeout where the SMS gateway answers: far above any answer's time on a loaded
 * machine. With 400 ms, an answered send timed out at load 25-30 and the test failed on a 502
 * it did not expect. Only the silent gateway's test waits a timeout out, with a short one:
 * there no answer can race it, since none ever comes.
 */
const ANSWERED_TIMEOUT_MS = 10_000;
const SILENT_TIMEOUT_MS = 300;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** The OTP as a whole token (not a run of digits inside a longer number or a hex hash). */
const otpToken = (otp: string) => new RegExp(`(?<![0-9a-f])${otp}(?![0-9a-f])`);

/** Fails when an OTP (or the SMS credential) appears in the gateway's output or in any file of its data dir. Call after stop. */
function assertNotLeaked(gw: Gateway, secrets: string[]): void {
  const output = gw.output.join('\n');
  for (const secret of secrets)
    assert.doesNotMatch(output, otpToken(secret), `${secret} in the gateway's log`);
  assert.ok(!output.includes(SMS_TOKEN), "the SMS credential in the gateway's log");
  for (const file of files(gw.data_dir)) {
    const text = readFileSync(file, 'latin1');
    for (const secret of secrets)
      assert.doesNotMatch(text, otpToken(secret), `${secret} in ${file}`);
    assert.ok(!text.includes(SMS_TOKEN), `the SMS credential in ${file}`);
  }
}

function otpOf(sms: Seen, field: 'text' | 'message' = 'text'): string {
  const text = sms.json?.[field] ?? new URL(sms.url, 'http://x').searchParams.get(field);
  const match =
    /^(\d{6}) is your OTP to register for money transfers\. It is valid for 5 minutes\. Do not share it with anyone\.$/.exec(
      String(text),
    );
  assert.ok(match, `the SMS text holds the OTP: ${String(text)}`);
  return match[1]!;
}

test('live mode: the OTP goes out by the configured SMS gateway; failures are 502 sms_failed, cancel the OTP, cost nothing, leak nothing', async () => {
  let behaviour: 'ok' | 'error' | 'refused' = 'ok';
  const sms = await startUpstream((_req, res) => {
    if (behaviour === 'ok') return json(res, 202, { status: 'queued', id: 'msg-1' });
    if (behaviour === 'error')
      return json(res, 500, { status: 'error', message: 'carrier unavailable' });
    return json(res, 401, { status: 'error', message: 'bad token' });
  });
  const gw = await startPaymentsGateway(
    paymentsConfig({
      dmt: {
        otp: {
          resend_interval_ms: 60_000,
          // One send an hour: the retry after a failed send below only works if the failure did not count.
          max_sends_per_hour: 1,
          sms: {
            type: 'http',
            name: 'sms-gw',
            url: `${sms.url}/v2/messages?route=otp`,
            method: 'POST',
            timeout_ms: ANSWERED_TIMEOUT_MS,
            fields: {
              to: 'mobile_e164',
              msisdn: 'mobile',
              text: 'message',
              sender: 'const:AIHUB',
              'meta.channel': 'const:otp',
            },
            headers: { 'x-client-id': 'aihub-test' },
            auth: { header: 'Authorization', value_env: 'SMS_TOKEN', prefix: 'Bearer ' },
          },
        },
      },
    }),
    { env: { AIHUB_MODE: 'live', SMS_TOKEN } },
  );
  const otps: string[] = [];
  try {
    const { headers } = await onboard(gw, 100, { dmt: true });
    const register = (mobile: string) =>
      request(`${gw.url}/api/dmt/remitter`, { headers, body: { mobile, name: 'Ravi Kumar' } });
    const verify = (mobile: string, otp: string) =>
      request(`${gw.url}/api/dmt/remitter/verify`, { headers, body: { mobile, otp } });

    // Sent: the request the SMS gateway receives, and an answer without the OTP.
    const sent = await register('+91 98765 00201');
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal(sent.body.status, true);
    assert.equal(sent.body.message, 'an OTP was sent to 9876500201');
    assert.equal(sent.body.data.otp_required, true);
    assert.equal(sent.body.data.verified, false);
    assert.ok(!('sandbox_otp' in sent.body.data), 'live mode never returns the OTP');
    assert.ok(!Number.isNaN(Date.parse(sent.body.data.otp_expires_at)));
    assert.equal(sms.seen.length, 1);
    const message = sms.seen[0]!;
    assert.equal(message.method, 'POST');
    assert.equal(message.url, '/v2/messages?route=otp');
    assert.equal(message.headers.authorization, `Bearer ${SMS_TOKEN}`);
    assert.equal(message.headers['x-client-id'], 'aihub-test');
    assert.match(String(message.headers['content-type']), /^application\/json/);
    const otp = otpOf(message);
    otps.push(otp);
    assert.deepEqual(message.json, {
      to: '+919876500201',
      msisdn: '9876500201',
      text: message.json.text,
      sender: 'AIHUB',
      meta: { channel: 'otp' },
    });
    assert.doesNotMatch(JSON.stringify(sent.body), otpToken(otp), 'the OTP is not in the answer');

    // A successful send starts the resend interval: no second SMS.
    const too_soon = await register('9876500201');
    assert.equal(too_soon.status, 429);
    assert.equal(too_soon.body.error.code, 'otp_rate_limited');
    assert.equal(sms.seen.length, 1);
    // The code from the SMS verifies the remitter.
    const verified = await verify('9876500201', otp);
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    assert.equal(verified.body.data.verified, true);

    // The SMS gateway fails (500) or refuses our credentials (401); silence: the next test.
    for (const [mode, mobile, reason] of [
      ['error', '9876500202', /answered HTTP 500/],
      ['refused', '9876500203', /answered HTTP 401/],
    ] as const) {
      behaviour = mode;
      const before: number = sms.seen.length;
      const failed = await register(mobile);
      assert.equal(failed.status, 502, `${mode}: ${JSON.stringify(failed.body)}`);
      assert.equal(failed.body.status, false);
      assert.equal(failed.body.error.code, 'sms_failed');
      assert.match(failed.body.message, /the OTP could not be sent/);
      assert.match(failed.body.message, reason);
      assert.equal(failed.body.data, undefined);
      assert.equal(sms.seen.length, before + 1, `${mode}: one SMS attempt`);
      const lost = otpOf(sms.seen[before]!);
      otps.push(lost);
      assert.doesNotMatch(
        JSON.stringify(failed.body),
        otpToken(lost),
        `${mode}: the OTP is not in the error`,
      );
      // The OTP that may still reach the phone late is cancelled.
      const late = await verify(mobile, lost);
      assert.equal(late.status, 422, mode);
      assert.equal(late.body.error.code, 'otp_not_requested', mode);
      const lookup = await request(`${gw.url}/api/dmt/remitter/${mobile}`, { headers });
      assert.equal(lookup.body.data.verified, false);

      // It can be asked for again at once (the resend interval is 60 s), and then works.
      behaviour = 'ok';
      const again = await register(mobile);
      assert.equal(
        again.status,
        200,
        `${mode}: a retry right after a failed send: ${JSON.stringify(again.body)}`,
      );
      const fresh = otpOf(sms.seen.at(-1)!);
      otps.push(fresh);
      assert.equal(sms.seen.at(-1)!.json.to, `+91${mobile}`);
      assert.equal((await verify(mobile, fresh)).body.data.verified, true, mode);
    }

    // Nothing was charged, the ledger holds.
    assert.equal(await balance(gw, headers), 100);
    await verifyOk(gw);
    await gw.stop();
    assert.ok(
      gw.output.some((line) => line.includes('could not send a remitter OTP')),
      'the failure is logged (without the OTP)',
    );
    // The request line of an error answer names the route with its mount path, as a success's does.
    assert.ok(
      gw.output.some(
        (line) => line.includes('"route":"/api/dmt/remitter"') && line.includes('"status":502'),
      ),
      'the 502 is logged under /api/dmt/remitter',
    );
    assertNotLeaked(gw, otps);
  } finally {
    await gw.stop();
    await sms.close();
  }
});

test('live mode: an SMS gateway that says nothing within timeout_ms is 502 sms_failed; the OTP it may still deliver late is cancelled', async () => {
  // Never answers: the sender's timeout is the only way the send ends, whatever the load.
  const sms = await startUpstream(() => {});
  const gw = await startPaymentsGateway(
    paymentsConfig({
      dmt: {
        otp: {
          sms: {
            type: 'http',
            url: `${sms.url}/v2/messages`,
            method: 'POST',
            timeout_ms: SILENT_TIMEOUT_MS,
            fields: { to: 'mobile_e164', text: 'message' },
            auth: { header: 'Authorization', value_env: 'SMS_TOKEN', prefix: 'Bearer ' },
          },
        },
      },
    }),
    { env: { AIHUB_MODE: 'live', SMS_TOKEN } },
  );
  const otps: string[] = [];
  try {
    const { headers } = await onboard(gw, 100, { dmt: true });
    const mobile = '9876500204';
    const failed = await request(`${gw.url}/api/dmt/remitter`, {
      headers,
      body: { mobile, name: 'Ravi Kumar' },
    });
    assert.equal(failed.status, 502, JSON.stringify(failed.body));
    assert.equal(failed.body.error.code, 'sms_failed');
    assert.match(failed.body.message, new RegExp(`did not answer in ${SILENT_TIMEOUT_MS} ms`));
    // The request reached the SMS gateway (recorded when its body is read: waited on, since
    // the gateway may have given up before this process read it).
    const [seen] = await sms.waitFor(1);
    const lost = otpOf(seen!);
    otps.push(lost);
    assert.doesNotMatch(JSON.stringify(failed.body), otpToken(lost));
    const late = await request(`${gw.url}/api/dmt/remitter/verify`, {
      headers,
      body: { mobile, otp: lost },
    });
    assert.equal(late.status, 422);
    assert.equal(late.body.error.code, 'otp_not_requested');
    assert.equal(
      (await request(`${gw.url}/api/dmt/remitter/${mobile}`, { headers })).body.data.verified,
      false,
    );
    assert.equal(await balance(gw, headers), 100);
    await verifyOk(gw);
    await gw.stop();
    assert.ok(gw.output.some((line) => line.includes('could not send a remitter OTP')));
    assertNotLeaked(gw, otps);
  } finally {
    await gw.stop();
    await sms.close();
  }
});

test('live mode: a GET SMS gateway gets its fields in the query string; an unreachable one is 502 sms_failed', async () => {
  const sms = await startUpstream((_req, res) => json(res, 200, { ok: true }));
  let sms_open = true;
  const gw = await startPaymentsGateway(
    paymentsConfig({
      dmt: {
        otp: {
          sms: {
            type: 'http',
            url: `${sms.url}/api/send?key=fixed`,
            method: 'GET',
            timeout_ms: ANSWERED_TIMEOUT_MS,
            fields: { number: 'mobile', message: 'message', route: 'const:4' },
            auth: { header: 'X-Auth-Token', value_env: 'SMS_TOKEN' },
          },
        },
      },
    }),
    { env: { AIHUB_MODE: 'live', SMS_TOKEN } },
  );
  const otps: string[] = [];
  try {
    const { headers } = await onboard(gw, 10, { dmt: true });
    const sent = await request(`${gw.url}/api/dmt/remitter`, {
      headers,
      body: { mobile: '9876500301', name: 'Meena Das' },
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const seen = sms.seen[0]!;
    assert.equal(seen.method, 'GET');
    assert.equal(seen.raw, '');
    assert.equal(seen.headers['x-auth-token'], SMS_TOKEN);
    const query = new URL(seen.url, 'http://x');
    assert.equal(query.pathname, '/api/send');
    assert.deepEqual([...query.searchParams.keys()].sort(), ['key', 'message', 'number', 'route']);
    assert.equal(query.searchParams.get('key'), 'fixed');
    assert.equal(query.searchParams.get('number'), '9876500301');
    assert.equal(query.searchParams.get('route'), '4');
    otps.push(otpOf(seen, 'message'));

    // The SMS gateway is gone: a transport error, the same 502.
    await sms.close();
    sms_open = false;
    const failed = await request(`${gw.url}/api/dmt/remitter`, {
      headers,
      body: { mobile: '9876500302', name: 'Meena Das' },
    });
    assert.equal(failed.status, 502, JSON.stringify(failed.body));
    assert.equal(failed.body.error.code, 'sms_failed');
    assert.doesNotMatch(
      failed.body.message,
      /message=|\d{6} is your OTP/,
      'the failing URL (with the OTP in its query) is not echoed',
    );
    assert.equal(await balance(gw, headers), 10);
    await verifyOk(gw);
    await gw.stop();
    assertNotLeaked(gw, otps);
    assert.ok(!gw.output.join('\n').includes('is your OTP'), 'no SMS text in the log');
  } finally {
    await gw.stop();
    if (sms_open) await sms.close();
  }
});

test('live mode without an SMS sender: remitter registration is 503 sms_unavailable and nothing is stored', async () => {
  const gw = await startPaymentsGateway(paymentsConfig(), { env: { AIHUB_MODE: 'live' } });
  try {
    assert.ok(
      gw.output.some((line) => line.includes('no SMS sender is configured')),
      'the gap is named at start',
    );
    const { headers } = await onboard(gw, 10, { dmt: true });
    const refused = await request(`${gw.url}/api/dmt/remitter`, {
      headers,
      body: { mobile: '9876500401', name: 'Asha Nair' },
    });
    assert.equal(refused.status, 503);
    assert.equal(refused.body.status, false);
    assert.equal(refused.body.error.code, 'sms_unavailable');
    const lookup = await request(`${gw.url}/api/dmt/remitter/9876500401`, { headers });
    assert.equal(lookup.status, 404, 'no remitter was created');
    assert.equal(await balance(gw, headers), 10);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});
