// PAN lookup's request.
import { z } from 'zod';
import { clientRef } from '../schemas.js';
import { PAN_VARIANTS } from './config.js';

export const panBody = z.strictObject({
  pan_number: z.string({ error: 'is required' }).max(20),
  client_ref: clientRef,
});

/** A PAN verification: the variant, and the name and date of birth to match where it asks. */
export const panVerifyBody = z
  .strictObject({
    pan_number: z.string({ error: 'is required' }).max(20),
    variant: z.enum(PAN_VARIANTS, { error: `must be one of ${PAN_VARIANTS.join(', ')}` }),
    name: z.string().trim().min(1).max(100).optional(),
    dob: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
      .refine((d) => !Number.isNaN(Date.parse(d)), 'is not a date')
      .optional(),
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
