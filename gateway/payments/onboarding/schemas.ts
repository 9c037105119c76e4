// Onboarding's requests: registration (the eKYC submission's schema is in kyc.ts).
import { z } from 'zod';

export const registerBody = z.strictObject({
  email: z.email('must be an email address').max(254),
  password: z.string().min(8, 'must be at least 8 characters').max(256),
  name: z.string().trim().min(1, 'must not be empty').max(200),
});
