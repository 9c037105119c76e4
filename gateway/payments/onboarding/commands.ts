// Onboarding's rules, as commands: sign-ups per client address are limited (a sliding hour);
// a registration creates the account and its first key in one commit; an eKYC submission is
// refused while one is under review or after approval; its documents, checked by content and
// sealed to the data dir as they were uploaded, are moved to their places before the commit
// and removed again if the commit fails.
import type { z } from 'zod';
import { createApiKey } from '../../accounts/accounts.js';
import { createPaymentsAccount } from '../accounts.js';
import { hashPassword } from '../../accounts/password.js';
import { ApiError, conflict } from '../../http/errors.js';
import { RateLimiter } from '../../kernel/rate-limit.js';
import type { Account } from '../../store/state.js';
import type { PaymentsContext } from '../context.js';
import {
  discardStaged,
  newSubmission,
  placeStaged,
  removeDocuments,
  type KycBody,
  type StagedDocument,
} from './kyc.js';
import type { registerBody } from './schemas.js';
import type { KycSubmission } from '../engine/tables.js';
import { newId } from '../../util/ids.js';
import { aadhaarFingerprint } from '../identity/duplicates.js';

type Ctx = Pick<PaymentsContext, 'store' | 'config' | 'settings' | 'clock' | 'sealer' | 'services'>;

export interface OnboardingCommands {
  /** Counts a sign-up from `address`; a 429 with Retry-After when the hour's limit is reached. */
  admitSignup(address: string): void;
  register(
    body: z.output<typeof registerBody>,
  ): Promise<{ account: Account; key: ReturnType<typeof createApiKey> }>;
  /** Submits eKYC with the documents staged by the upload (each placed, or discarded on a refusal). */
  submitKyc(account_id: string, body: KycBody, files: StagedDocument[]): Promise<KycSubmission>;
}

export function refuseResubmission(status: string | undefined): void {
  if (status === 'submitted')
    throw conflict('an eKYC submission is under review already', 'kyc_under_review');
  if (status === 'approved') throw conflict('eKYC is approved already', 'kyc_approved');
}

export function onboardingCommands(ctx: Ctx): OnboardingCommands {
  const { store, config, settings } = ctx;
  const limiter = new RateLimiter(
    { max: settings.register.per_ip_per_hour, window_ms: 3_600_000, refill: 'sliding' },
    // Per deployment: several gateways on one database each admit their share.
    { max_keys: 10_000, shared_by: () => store.liveGateways() },
  );
  return {
    admitSignup(address) {
      const wait_s = limiter.take(address, ctx.clock.now().getTime()).retry_after_s;
      if (wait_s > 0) {
        throw new ApiError(
          429,
          'rate_limit_exceeded',
          `too many sign-ups from this address; retry in ${wait_s} s`,
          null,
          null,
          { 'retry-after': String(wait_s) },
        );
      }
    },

    async register(body) {
      const password_hash = await hashPassword(body.password);
      const id = newId('acc'); // drawn once: every run of the transaction reads the same keys
      return store.transact((tx) => {
        const { email, name } = body;
        const account = createPaymentsAccount(tx, ctx.services, { id, email, name, password_hash });
        return {
          account,
          key: createApiKey(tx, store.indexBy('keys', 'account_id'), account.id, 'default'),
        };
      });
    },

    async submitKyc(account_id, body, files) {
      try {
        refuseResubmission(store.get('kyc_submissions', account_id)?.status);
      } catch (error) {
        discardStaged(files);
        throw error;
      }
      // What is kept of the submission besides its fields: the Aadhaar number only as its fingerprint.
      const kept = {
        documents: placeStaged(config.data_dir, files),
        aadhaar_fingerprint: aadhaarFingerprint(ctx.sealer, body.aadhaar_number),
      };
      try {
        return await store.transact((tx) => {
          const previous = tx.get('kyc_submissions', account_id);
          refuseResubmission(previous?.status);
          const next = newSubmission(account_id, body, kept, tx.now.toISOString(), previous);
          tx.set('kyc_submissions', account_id, next);
          tx.set('accounts', account_id, {
            ...tx.get('accounts', account_id)!,
            kyc_status: 'submitted',
          });
          return next;
        });
      } catch (error) {
        removeDocuments(config.data_dir, kept.documents);
        throw error;
      }
    },
  };
}
