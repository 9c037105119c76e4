// Engine name → engine, built from config. Adding an engine type is adding a file here.
import type { EngineConfig } from '../../chat/config.js';
import type { Engine } from '../types.js';
import { BuiltinEngine } from './builtin.js';
import { OpenAICompatibleEngine } from './openai-compatible.js';

export function createEngines(configs: Record<string, EngineConfig>, env: NodeJS.ProcessEnv = process.env): Map<string, Engine> {
  const engines = new Map<string, Engine>();
  for (const [name, config] of Object.entries(configs)) {
    engines.set(name, config.type === 'builtin' ? new BuiltinEngine(config) : new OpenAICompatibleEngine(name, config, env));
  }
  return engines;
}
