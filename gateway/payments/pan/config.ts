// PAN verification's variants and their fees (`payments.pan.variants`): what each answers
// beyond the lookup of POST /api/pan-find (which costs `payments.pan.fee`).
import { z } from 'zod';
import { unitsMicrosSchema } from '../../util/amount-schema.js';

export const PAN_VARIANTS = ['status', 'name_dob', 'aadhaar_seeding', 'comprehensive'] as const;
export type PanVariant = (typeof PAN_VARIANTS)[number];

/** A fee in currency units (its default too), kept in micro-units. */
const fee = (fallback: number) => unitsMicrosSchema(10_000).prefault(fallback);

/**
 * One fee per variant (GST-inclusive, charged only when the PAN service answers):
 * `status` the PAN's status (valid, deactivated, deleted, fake) and holder type;
 * `name_dob` the status with name and date-of-birth match flags (the holder's name is not
 * returned); `aadhaar_seeding` the status with the Aadhaar seeding status; `comprehensive`
 * all of them and the holder's name.
 */
export const panVariantsSchema = z
  .strictObject({
    status: fee(1),
    name_dob: fee(3),
    aadhaar_seeding: fee(3),
    comprehensive: fee(5),
  })
  .prefault({});
