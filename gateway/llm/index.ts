// The llm room: `createLlm(deps)` builds every configured engine (each target of
// `chat.engines`, by its type's file in llm/engines/) with its own upstream connection pool.
// main.ts builds it, hands the engines to the chat room, and closes them at shutdown, after
// the server stopped taking requests.
import type { RoomDeps } from '../deps.js';
import { createEngines } from './engines/index.js';
import type { Engine } from './types.js';

export interface Llm {
  /** Engines by target name, as the chat router calls them. */
  engines: Map<string, Engine>;
  /** Closes every engine's upstream connections. */
  close(): Promise<void>;
}

export function createLlm(
  deps: Pick<RoomDeps, 'config'>,
  env: NodeJS.ProcessEnv = process.env,
): Llm {
  const engines = createEngines(deps.config.chat.engines, env);
  return {
    engines,
    close: async () => {
      await Promise.all([...engines.values()].map((engine) => engine.close()));
    },
  };
}
