// PAN lookup's request.
import { z } from 'zod';
import { clientRef } from '../schemas.js';

export const panBody = z.strictObject({
  pan_number: z.string({ error: 'is required' }).max(20),
  client_ref: clientRef,
});
