// The engine registry: each engine type is one file beside this one exporting its config
// schema and its class; adding a type is adding that file and one line to ENGINE_TYPES.
import { z } from 'zod';
import type { Engine } from '../types.js';
import { BuiltinEngine, builtinEngineSchema } from './builtin.js';
import { OpenAICompatibleEngine, openaiCompatibleEngineSchema } from './openai-compatible.js';

interface EngineType<S extends z.ZodObject<{ type: z.ZodLiteral<string> }>> {
  schema: S;
  create(name: string, config: z.output<S>, env: NodeJS.ProcessEnv): Engine;
}

function engineType<S extends z.ZodObject<{ type: z.ZodLiteral<string> }>>(
  type: EngineType<S>,
): EngineType<S> {
  return type;
}

const ENGINE_TYPES = [
  engineType({ schema: builtinEngineSchema, create: (_name, config) => new BuiltinEngine(config) }),
  engineType({
    schema: openaiCompatibleEngineSchema,
    create: (name, config, env) => new OpenAICompatibleEngine(name, config, env),
  }),
] as const;

type Schemas<T extends readonly { schema: unknown }[]> = {
  -readonly [K in keyof T]: T[K]['schema'];
};

/** One target of `chat.engines`: the union of every registered type's config, by `type`. */
export const engineSchema = z.discriminatedUnion(
  'type',
  ENGINE_TYPES.map((type) => type.schema) as Schemas<typeof ENGINE_TYPES>,
);
export type EngineConfig = z.output<typeof engineSchema>;

const BY_TYPE = new Map<string, EngineType<never>>(
  ENGINE_TYPES.map((type) => [type.schema.shape.type.value, type as EngineType<never>]),
);

export function createEngines(
  configs: Record<string, EngineConfig>,
  env: NodeJS.ProcessEnv = process.env,
): Map<string, Engine> {
  const engines = new Map<string, Engine>();
  for (const [name, config] of Object.entries(configs)) {
    const type = BY_TYPE.get(config.type);
    if (!type) throw new Error(`engine ${name}: unknown type ${config.type}`);
    engines.set(
      name,
      (type.create as (name: string, config: EngineConfig, env: NodeJS.ProcessEnv) => Engine)(
        name,
        config,
        env,
      ),
    );
  }
  return engines;
}
