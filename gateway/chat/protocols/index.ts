// The one list of the /v1 protocols. A protocol is its folder here (protocols/<name>/): its
// translation for the pipeline, its native dialect, its paths, error shape and docs, given to
// the route table (chat/routes.ts) as its ProtocolRoutes. Adding one is a folder and a line
// in this list; nothing outside its folder and this list names it (scripts/doors.mjs).
import type { ProtocolRoutes } from '../route.js';
import { chatRoutes } from './chat/route.js';
import { completionsRoutes } from './completions/route.js';
import { embeddingsRoutes } from './embeddings/run.js';
import { geminiRoutes } from './gemini/route.js';
import { messagesRoutes } from './messages/route.js';
import { responsesRoutes } from './responses/route.js';

export const PROTOCOLS: readonly ProtocolRoutes[] = [
  chatRoutes,
  responsesRoutes,
  messagesRoutes,
  geminiRoutes,
  embeddingsRoutes,
  completionsRoutes,
];

/** Every protocol's name, for the metrics and the balance's per-protocol usage. */
export const PROTOCOL_NAMES: readonly string[] = PROTOCOLS.map((protocol) => protocol.name);

/** The protocols a target may speak natively (`protocols` in its config). */
export const NATIVE_PROTOCOLS: readonly string[] = PROTOCOLS.filter(
  (protocol) => protocol.native,
).map((protocol) => protocol.name);
