// Razorpay Smart Collect: an account's virtual account (a bank account number + IFSC, and a
// UPI ID) made with POST /v1/virtual_accounts and read back with GET /v1/virtual_accounts/:id.
// Its credits come as `virtual_account.credited` webhooks (index.ts reads them).
import { z } from 'zod';
import {
  ProviderCallError,
  type CreateVirtualAccountInput,
  type VirtualAccount,
} from '../../types.js';

const virtualAccountShape = z.object({
  id: z.string().min(1).max(64),
  status: z.string().max(20),
  receivers: z
    .array(
      z
        .object({
          entity: z.string().max(40),
          account_number: z.string().max(40).nullish(),
          ifsc: z.string().max(20).nullish(),
          bank_name: z.string().max(100).nullish(),
          address: z.string().max(255).nullish(),
        })
        .loose(),
    )
    .max(10),
});

/** The one call of createRazorpay (index.ts): null when Razorpay knows no such id. */
export type RazorpayCall = <S extends z.ZodType>(
  method: 'GET' | 'POST',
  path: string,
  shape: S,
  body?: unknown,
  signal?: AbortSignal,
) => Promise<z.output<S> | null>;

function virtualAccountOf(answer: z.output<typeof virtualAccountShape>): VirtualAccount {
  const bank = answer.receivers.find((r) => r.entity === 'bank_account');
  const vpa = answer.receivers.find((r) => r.entity === 'vpa');
  if (!bank?.account_number || !bank.ifsc)
    throw new ProviderCallError(`razorpay virtual account ${answer.id} has no bank account`, null);
  return {
    virtual_account_id: answer.id,
    account_number: bank.account_number,
    ifsc: bank.ifsc,
    bank_name: bank.bank_name ?? null,
    upi_id: vpa?.address ?? null,
    status: answer.status === 'active' ? 'active' : 'closed',
  };
}

export function razorpayVirtualAccounts(call: RazorpayCall) {
  return {
    async createVirtualAccount(
      input: CreateVirtualAccountInput,
      signal?: AbortSignal,
    ): Promise<VirtualAccount> {
      const answer = await call(
        'POST',
        '/v1/virtual_accounts',
        virtualAccountShape,
        {
          // A UPI ID too (Razorpay gives one in live mode; its test mode makes bank accounts only).
          receivers: { types: ['bank_account', 'vpa'] },
          name: input.name.slice(0, 100),
          description: `Wallet top-ups of ${input.account_id}`,
          notes: { account_id: input.account_id },
        },
        signal,
      );
      if (!answer) throw new ProviderCallError('razorpay refused the virtual account (404)', 404);
      return virtualAccountOf(answer);
    },
    async fetchVirtualAccount(id: string, signal?: AbortSignal): Promise<VirtualAccount> {
      const path = `/v1/virtual_accounts/${encodeURIComponent(id)}`;
      const answer = await call('GET', path, virtualAccountShape, undefined, signal);
      if (!answer) throw new ProviderCallError(`razorpay knows no virtual account ${id}`, 404);
      return virtualAccountOf(answer);
    },
  };
}
