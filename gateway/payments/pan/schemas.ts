// PAN lookup's request.
import { z } from 'zod';
import { clientRef } from '../schemas.js';
import { dateField, panField, personNameField } from '../identity/fields.js';
import { PAN_VARIANTS } from './config.js';

export const panBody = z.strictObject({
  pan_number: panField,
  client_ref: clientRef,
});

/** A PAN verification: the variant, and the name and date of birth to match where it asks. */
export const panVerifyBody = z
  .strictObject({
    pan_number: panField,
    variant: z.enum(PAN_VARIANTS, { error: `must be one of ${PAN_VARIANTS.join(', ')}` }),
    name: personNameField.optional(),
    /** The holder's date of birth (in the past: checked against the clock by verifyPan). */
    dob: dateField.optional(),
    client_ref: clientRef,
  })
  .superRefine((body, ctx) => {
    if (body.variant !== 'name_dob' && body.variant !== 'comprehensive') return;
    for (const field of ['name', 'dob'] as const)
      if (body[field] === undefined)
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `is required by the ${body.variant} variant`,
        });
  });
