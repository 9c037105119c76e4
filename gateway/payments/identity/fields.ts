// The request fields that carry an identity, as zod schemas: every endpoint and request shape
// that takes a PAN, an Aadhaar number, a mobile number, an IFSC, an account number, a person's
// name or a date of birth uses these, so a rule is written once (docs/payments-api.md,
// "Identity numbers"). A breach is a 400 naming the field, before anything is charged.
import { z } from 'zod';
import { aadhaarError, normalizeAadhaar } from './aadhaar.js';
import { accountNumberError, ifscError, normalizeAccountNumber, normalizeIfsc } from './bank.js';
import { mobileError, normalizeMobile } from './mobile.js';
import { normalizePan, panError } from './pan.js';
import { calendarDateError, normalizeName, personNameError } from './person.js';

/** A zod refinement from a rule that answers with its message or null; `code` is the API error's. */
export const check =
  (error: (value: string) => string | null, code?: string) =>
  (value: string, ctx: z.RefinementCtx) => {
    const message = error(value);
    if (message) ctx.addIssue({ code: 'custom', message, ...(code ? { params: { code } } : {}) });
  };

const text = (max: number) =>
  z.string({ error: 'is required' }).max(max, `must be at most ${max} characters`);

export const panField = text(20)
  .transform(normalizePan)
  .superRefine(check(panError, 'invalid_pan'));
export const aadhaarField = text(20)
  .transform(normalizeAadhaar)
  .superRefine(check(aadhaarError, 'invalid_aadhaar'));
export const mobileField = text(20)
  .transform(normalizeMobile)
  .superRefine(check(mobileError, 'invalid_mobile'));
export const ifscField = text(20)
  .transform(normalizeIfsc)
  .superRefine(check(ifscError, 'invalid_ifsc'));
export const accountNumberField = text(40)
  .transform(normalizeAccountNumber)
  .superRefine(check(accountNumberError, 'invalid_account_number'));
/** A person's name as NEFT and IMPS carry it (identity/person.ts). */
export const personNameField = text(200)
  .transform(normalizeName)
  .superRefine(check(personNameError, 'invalid_name'));

/** A calendar date YYYY-MM-DD; whether a date of birth is in the past needs the clock (dateOfBirthError). */
export const dateField = text(10).superRefine(check(calendarDateError, 'invalid_date'));
