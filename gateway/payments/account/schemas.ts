// The account's own requests: its webhook URL.
import { z } from 'zod';

export const webhookBody = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2_048),
});
