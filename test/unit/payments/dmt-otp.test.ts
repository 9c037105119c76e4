// The one OTP mechanism of DMT (gateway/payments/dmt/otp.ts), which a remitter's registration,
// a refund's consent and every transfer share: only a salted hash is kept, wrong codes are
// counted and cancel the OTP at the limit, an expired OTP is refused, and the sends to one
// number are limited per hour (and, where configured, by a resend interval).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkOtp,
  countOtpSend,
  issueOtp,
  otpRefusal,
  otpSendRefusal,
  uncountOtpSend,
} from '../../../gateway/payments/dmt/otp.ts';

const NOW = Date.parse('2026-11-26T10:00:00.000Z');

test('an issued OTP keeps no code, only its salted hash, and expires after its lifetime', () => {
  const a = issueOtp('123456', NOW, 300_000);
  const b = issueOtp('123456', NOW, 300_000);
  assert.ok(!JSON.stringify(a).includes('123456'));
  assert.notEqual(a.hash, b.hash, 'a fresh salt each time');
  assert.equal(a.expires_at, '2026-11-26T10:05:00.000Z');
  assert.equal(a.attempts, 0);
  assert.deepEqual(checkOtp(a, '123456', NOW + 299_999, 3), { ok: true });
  const expired = checkOtp(a, '123456', NOW + 300_000, 3);
  assert.equal(expired.ok ? null : expired.code, 'otp_expired');
});

test('wrong codes are counted; at max_attempts the OTP is cancelled; the right code takes no attempt', () => {
  let stored = issueOtp('654321', NOW, 300_000);
  const first = checkOtp(stored, '000000', NOW, 3);
  assert.ok(!first.ok);
  assert.deepEqual([first.code, first.left, first.attempts], ['otp_invalid', 2, 1]);
  stored = first.keep!;
  assert.deepEqual(checkOtp(stored, '654321', NOW, 3), { ok: true });
  const second = checkOtp(stored, '000001', NOW, 3);
  assert.ok(!second.ok && second.keep);
  const third = checkOtp(second.keep, '000002', NOW, 3);
  assert.ok(!third.ok);
  assert.deepEqual([third.code, third.attempts, third.keep], ['otp_attempts_exceeded', 3, null]);
  assert.equal(otpRefusal(third, 'POST /x').status, 422);
  assert.match(otpRefusal(third, 'POST /x').message, /3 times; this OTP is cancelled.*POST \/x/);
  const none = checkOtp(null, '654321', NOW, 3);
  assert.equal(none.ok ? null : none.code, 'otp_not_requested');
});

test('sends: the resend interval, the hour window, and a failed send not counted', () => {
  const at = (ms: number) => new Date(NOW + ms).toISOString();
  const rules = { resend_interval_ms: 30_000, max_sends_per_hour: 2 };
  let sends = countOtpSend(null, at(0));
  assert.match(
    otpSendRefusal(sends, NOW + 10_000, rules)!.message,
    /new one can be requested in 20 s/,
  );
  assert.equal(otpSendRefusal(sends, NOW + 30_000, rules), null);
  sends = countOtpSend(sends, at(30_000));
  const capped = otpSendRefusal(sends, NOW + 60_000, rules)!;
  assert.match(capped.message, /2 OTPs were sent in the last hour/);
  assert.equal(capped.wait_s, 3_600 - 60);
  assert.equal(otpSendRefusal(sends, NOW + 3_600_000, rules), null, 'a new window');
  // A send that failed: neither the interval nor the hour's count holds the next one back.
  const failed = uncountOtpSend(sends);
  assert.equal(failed.count, 1);
  assert.equal(otpSendRefusal(failed, NOW + 30_001, rules), null);
  // Transfers: no resend interval, only the hour's count.
  const transfers = { resend_interval_ms: 0, max_sends_per_hour: 2 };
  assert.equal(otpSendRefusal(countOtpSend(null, at(0)), NOW, transfers), null);
});
