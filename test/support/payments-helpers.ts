// Shared steps of the payments gateway tests: a config with short intervals, and onboarding
// over HTTP in the seed's order (register → eKYC → approval → activation → credit).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { admin, request, startGateway, tempDir, type Gateway, type StartOptions } from '../gateway/helpers.ts';
import { verhoeffCheckDigit } from '../../gateway/payments/validators.ts';

/** A valid Aadhaar number built from 11 digits (first 2–9) plus its Verhoeff check digit. */
export function aadhaar(first11 = '23412341234'): string {
  return first11 + verhoeffCheckDigit(first11);
}

export const VALID_KYC = { name: 'Asha Verma', aadhaar_number: '2341 2341 2346', pan_number: 'AAPFU0939F', gstin: '27AAPFU0939F1ZV' };

export function paymentsConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    payments: {
      tick_ms: 20,
      kyc: { max_file_bytes: 64 * 1024, max_files: 3 },
      reconcile: { first_check_ms: 100, max_backoff_ms: 400 },
      webhooks: { first_retry_ms: 100, max_backoff_ms: 400, timeout_ms: 2_000 },
      providers: {
        recharge: [
          { type: 'sandbox', name: 'sandbox-a', hang_on: ['0004'], timeout_ms: 300, pending_ms: 300 },
          { type: 'sandbox', name: 'sandbox-b', timeout_ms: 300, pending_ms: 300 },
        ],
      },
      ...overrides,
    },
  };
}

export async function startPaymentsGateway(config: Record<string, unknown> = paymentsConfig(), options: StartOptions = {}): Promise<Gateway> {
  const file = join(tempDir('aihub-pay-config-'), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return startGateway({ ...options, env: { ...options.env, AIHUB_CONFIG: file } });
}

let counter = 0;

/** Register → eKYC → approve → activate recharge → credit; returns the key and the account id. */
export async function onboard(gateway: Gateway, amount = 1_000): Promise<{ key: string; account_id: string; headers: Record<string, string> }> {
  const api = admin(gateway);
  const email = `dev${++counter}-${process.pid}-${Date.now()}@example.com`;
  const registered = await request(`${gateway.url}/api/register`, { body: { email, password: 'correct horse battery', name: 'Dev' } });
  if (registered.status !== 201) throw new Error(`register: ${registered.status} ${JSON.stringify(registered.body)}`);
  const { api_key: key, account_id } = registered.body.data;
  const headers = { 'x-api-key': key };
  const kyc = await request(`${gateway.url}/api/kyc`, { headers, body: VALID_KYC });
  if (kyc.status !== 200) throw new Error(`kyc: ${kyc.status} ${JSON.stringify(kyc.body)}`);
  const approved = await api.post(`/admin/kyc/${account_id}/approve`, {});
  if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${JSON.stringify(approved.body)}`);
  const services = await api.post(`/admin/accounts/${account_id}/services`, { recharge: true });
  if (services.status !== 200) throw new Error(`services: ${services.status} ${JSON.stringify(services.body)}`);
  if (amount > 0) {
    const credit = await api.post(`/admin/accounts/${account_id}/credit`, { amount, reference: `fund-${account_id}` });
    if (credit.status !== 200) throw new Error(`credit: ${credit.status} ${JSON.stringify(credit.body)}`);
  }
  return { key, account_id, headers };
}

export async function balance(gateway: Gateway, headers: Record<string, string>): Promise<number> {
  const reply = await request(`${gateway.url}/api/wallet/balance`, { headers });
  if (reply.status !== 200) throw new Error(`balance: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.data.balance;
}

/** Polls a transaction until it is final (bounded). */
export async function waitFinal(gateway: Gateway, headers: Record<string, string>, txn_id: string, timeout_ms = 15_000): Promise<any> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    const reply = await request(`${gateway.url}/api/transactions/${txn_id}`, { headers });
    if (reply.status === 200 && reply.body.data.status !== 'pending') return reply.body.data;
    if (Date.now() > deadline) throw new Error(`transaction ${txn_id} still pending: ${JSON.stringify(reply.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
