// Steps 1–3, the front every /v1 request that spends a key's rate runs (the pipeline,
// embeddings, the count-tokens routes): who is asking, the key's rate, the JSON body.
import type { IncomingMessage } from 'node:http';
import type { Locals } from '../../http/lean.js';
import type { ChatRoom } from '../room.js';
import { takeKeyRates } from '../key-rates.js';
import { authorize } from './auth.js';
import { readJson } from './body.js';
import { takeRate } from './rate.js';
import { withSpanSync } from '../../telemetry/index.js';

export type Front = ReturnType<typeof authorize> & {
  /** Gives the rate's token back (a request the store refused). */
  rate: ReturnType<typeof takeRate>;
  /** The body as JSON, for the protocol to validate. */
  raw: unknown;
};

export async function front(room: ChatRoom, req: IncomingMessage, locals: Locals): Promise<Front> {
  const found = withSpanSync('aihub.authenticate', () => authorize(room, req, locals));
  takeKeyRates(room, found.key);
  const rate = takeRate(room, found.key.id);
  const raw = await readJson(req, room.config.body_limit_bytes);
  return { ...found, rate, raw };
}
