// The chat room: the /v1 API. createChat builds the room's state (chat/room.ts) once; every
// request goes through the route table (chat/routes.ts) to the one pipeline
// (chat/pipeline.ts) or a small handler. Served by the lean lane in front of Express
// (gateway/http/lean.ts), on Node's own request and response objects.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RoomDeps } from '../deps.js';
import type { TrustProxy } from '../accounts/ip-whitelist.js';
import { knownKeyLoaded } from '../accounts/auth.js';
import type { RouteDoc } from '../http/openapi.js';
import type { Locals } from '../http/lean.js';
import { createLlm, type Llm } from '../llm/index.js';
import type { Engine } from '../llm/types.js';
import type { BreakerState } from '../llm/breaker.js';
import type { ChatConfig } from './config.js';
import { chatRouteDocs } from './openapi.js';
import { ChatRoom } from './room.js';
import { adoptRequest, routeChat, servesUrl } from './routes.js';

export interface ChatOptions {
  /** Engines by name (the llm room's, or scripted ones in tests); by default the service builds and owns the config's. */
  engines?: Map<string, Engine>;
  env?: NodeJS.ProcessEnv;
  /** The config's trust_proxy as main.ts compiled it once, the rule Express's req.ip applies too; default: the socket's peer. */
  trust_proxy?: TrustProxy;
}

export function createChat(deps: RoomDeps, options: ChatOptions = {}): ChatService {
  return new ChatService(deps, deps.config.chat, options);
}

export class ChatService {
  /** The /v1 API's part of the OpenAPI document. */
  readonly docs: RouteDoc[] = chatRouteDocs;
  /** Whether a request's URL is this room's: /v1/ and the prefixes its protocols serve. */
  readonly serves = servesUrl;
  private readonly room: ChatRoom;
  private readonly own_llm: Llm | null;

  constructor(
    private readonly deps: RoomDeps,
    config: ChatConfig,
    options: ChatOptions,
  ) {
    this.own_llm = options.engines ? null : createLlm(deps, options.env);
    const engines = options.engines ?? this.own_llm!.engines;
    this.room = new ChatRoom(
      deps,
      config,
      engines,
      options.env ?? process.env,
      options.trust_proxy,
    );
    this.room.shared_reservations?.start();
  }

  /** Closes the engines this service built itself; engines handed in are their builder's to close. */
  async close(): Promise<void> {
    this.room.shared_reservations?.stop();
    await this.own_llm?.close();
  }

  /** The circuit breaker of each engine a tier routes to (`/readyz`: not ready while every one is open). */
  breakerStates(): Record<string, BreakerState> {
    const targets = new Set(Object.values(this.room.config.models).flatMap((tier) => tier.targets));
    return Object.fromEntries(
      Object.entries(this.room.router.breakerStates()).filter(([name]) => targets.has(name)),
    );
  }

  /** Routes one /v1 request; an unknown path or method is a 404 in OpenAI's shape. */
  handle(req: IncomingMessage, res: ServerResponse, locals: Locals): Promise<void> | void {
    adoptRequest(req);
    // The key and its account are loaded before the synchronous steps read them (PostgreSQL).
    const loading = knownKeyLoaded(this.deps.store, req.headers);
    if (loading) return loading.then(() => routeChat(this.room, req, res, locals));
    return routeChat(this.room, req, res, locals);
  }
}
