// `aihub-gateway providers add|list|remove`: the model providers of a gateway's config file.
// Each command reads the file (AIHUB_CONFIG or --config), changes `chat.providers`, remakes
// the engines and tiers from it (catalogue/chain.ts), checks the whole result with the
// gateway's own config schema, and only then replaces the file (a temp file renamed over it).
// Keys are never written: a provider names the environment variable that holds its key.
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  catalogueInfo,
  isProviderKindId,
  PROVIDER_KIND_IDS,
  providerKind,
  resolvedProvider,
  TIER_IDS,
  withExchangeRate,
  withProviderChain,
  chainOf,
  type ProviderEntry,
  type TierId,
} from '../catalogue/index.js';
import { configSchema } from '../config.js';
import { microsToUnits } from '../util/money.js';

export const PROVIDERS_USAGE = `Usage: aihub-gateway providers list [--config FILE]
       aihub-gateway providers add KIND [--name NAME] [--base-url URL] [--key-env VAR]
           --model [TIER=]MODEL ... [--price MODEL=INPUT/OUTPUT[/CACHED]] ...
           [--exchange-rate RATE] [--offline-fallback yes|no] [--config FILE]
       aihub-gateway providers remove NAME [--config FILE]

KIND: ${PROVIDER_KIND_IDS.join(', ')}.
TIER: free, lite, standard, pro, max (or a tier id); a MODEL without TIER= answers every tier.
A provider added again under its name is replaced in place; new ones go last in the failover
order. Prices come from the model catalogue (US dollars, converted at --exchange-rate: wallet
currency units per dollar, kept in chat.pricing.exchange_rate); --price gives a model's price
in the wallet's currency per million tokens; a model with neither is served unpriced.
The file is AIHUB_CONFIG or --config; add creates it when it does not exist.`;

/** A config file over this is not one this command wrote. */
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
const MAX_MODEL_FLAGS = 16;

export class ProvidersCliError extends Error {
  override name = 'ProvidersCliError';
}

const TIER_NAMES: Record<string, TierId> = {
  free: 'service-ai-free',
  lite: 'service-ai-lite',
  standard: 'service-ai-standard-6',
  pro: 'service-ai-pro-4',
  max: 'service-ai-max',
};

type Json = Record<string, unknown>;

/** Runs one `providers` command; what it prints goes to `out`. Throws ProvidersCliError on bad input. */
export function providersCommand(
  argv: string[],
  env: NodeJS.ProcessEnv,
  out: (text: string) => void,
): void {
  try {
    run(argv, env, out);
  } catch (error) {
    if (!(error instanceof z.ZodError)) throw error;
    throw new ProvidersCliError(
      error.issues
        .map((issue) => `chat.providers.${issue.path.join('.')}: ${issue.message}`)
        .join('\n'),
    );
  }
}

function run(argv: string[], env: NodeJS.ProcessEnv, out: (text: string) => void): void {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        config: { type: 'string' },
        name: { type: 'string' },
        'base-url': { type: 'string' },
        'key-env': { type: 'string' },
        model: { type: 'string', multiple: true },
        price: { type: 'string', multiple: true },
        'exchange-rate': { type: 'string' },
        'offline-fallback': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new ProvidersCliError((error as Error).message);
  }
  const { values, positionals } = parsed;
  const [verb, subject, ...rest] = positionals;
  if (values.help || verb === undefined) return out(`${PROVIDERS_USAGE}\n`);
  if (rest.length) throw new ProvidersCliError(`unexpected argument "${rest[0]}"`);
  const file = values.config ?? env.AIHUB_CONFIG;
  if (!file) throw new ProvidersCliError('name the config file: --config FILE or AIHUB_CONFIG');
  if (verb === 'list') {
    if (subject !== undefined) throw new ProvidersCliError(`unexpected argument "${subject}"`);
    return out(describeChain(checked(readConfig(file, false), file), env));
  }
  if (verb === 'remove') {
    if (!subject) throw new ProvidersCliError('remove needs the provider NAME');
    const config = readConfig(file, false);
    const chain = chainOf(config);
    const left = chain.chain.filter((p) => p.name.toLowerCase() !== subject.toLowerCase());
    if (left.length === chain.chain.length)
      throw new ProvidersCliError(`no provider named "${subject}" in ${file}`);
    const next = checked(withProviderChain(config, { ...chain, chain: left }), file);
    writeConfig(file, next);
    return out(`removed ${subject}\n${describeChain(next, env)}`);
  }
  if (verb === 'add') {
    if (!subject)
      throw new ProvidersCliError(`add needs the KIND: ${PROVIDER_KIND_IDS.join(', ')}`);
    const config = readConfig(file, true);
    const next = checked(add(config, subject, values), file);
    writeConfig(file, next);
    const entry = chainOf(next).chain.find((p) => p.name === (values.name ?? subject))!;
    return out(`added ${entry.name}\n${describeChain(next, env)}`);
  }
  throw new ProvidersCliError(`unknown providers command "${verb}"`);
}

interface AddFlags {
  name?: string | undefined;
  'base-url'?: string | undefined;
  'key-env'?: string | undefined;
  model?: string[] | undefined;
  price?: string[] | undefined;
  'exchange-rate'?: string | undefined;
  'offline-fallback'?: string | undefined;
}

function add(config: Json, kind: string, flags: AddFlags): Json {
  if (!isProviderKindId(kind))
    throw new ProvidersCliError(`unknown KIND "${kind}"; one of ${PROVIDER_KIND_IDS.join(', ')}`);
  const entry = {
    kind,
    name: flags.name ?? kind,
    ...(flags['base-url'] ? { base_url: flags['base-url'] } : {}),
    ...(flags['key-env'] ? { api_key_env: flags['key-env'] } : {}),
    models: tierModels(flags.model ?? []),
    ...(flags.price?.length ? { prices: userPrices(flags.price) } : {}),
  };
  const chain = chainOf(config);
  const at = chain.chain.findIndex((p) => p.name.toLowerCase() === entry.name.toLowerCase());
  const list: unknown[] = [...chain.chain];
  if (at >= 0) list[at] = entry;
  else list.push(entry);
  const offline = flags['offline-fallback'];
  if (offline !== undefined && offline !== 'yes' && offline !== 'no')
    throw new ProvidersCliError('--offline-fallback is yes or no');
  const with_rate = withRateFlag(config, flags['exchange-rate']);
  return withProviderChain(with_rate, {
    chain: list,
    offline_last_resort: offline === undefined ? chain.offline_last_resort : offline === 'yes',
  });
}

/** `--model lite=gpt-4o-mini --model pro=gpt-5`, or `--model gpt-5` for every tier. */
function tierModels(flags: string[]): Partial<Record<TierId, string>> {
  if (!flags.length) throw new ProvidersCliError('add needs at least one --model [TIER=]MODEL');
  if (flags.length > MAX_MODEL_FLAGS) throw new ProvidersCliError('too many --model flags');
  const models: Partial<Record<TierId, string>> = {};
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    const tier = eq >= 0 ? flag.slice(0, eq) : null;
    const model = eq >= 0 ? flag.slice(eq + 1) : flag;
    if (tier === null) {
      for (const id of TIER_IDS) models[id] ??= model;
      continue;
    }
    const id = Object.hasOwn(TIER_NAMES, tier)
      ? TIER_NAMES[tier]!
      : (TIER_IDS as readonly string[]).includes(tier)
        ? (tier as TierId)
        : null;
    if (!id)
      throw new ProvidersCliError(
        `--model ${flag}: "${tier}" is not a tier (${Object.keys(TIER_NAMES).join(', ')})`,
      );
    models[id] = model;
  }
  return models;
}

const priceNumber = z.coerce.number().min(0).max(1_000_000);

/** `--price my-model=2.5/10/0.25`: input/output[/cached input] per million tokens in the wallet's currency. */
function userPrices(flags: string[]): Record<string, Json> {
  if (flags.length > MAX_MODEL_FLAGS) throw new ProvidersCliError('too many --price flags');
  const prices: Record<string, Json> = {};
  for (const flag of flags) {
    const match = /^(.{1,256})=([^/=]+)\/([^/=]+)(?:\/([^/=]+))?$/.exec(flag);
    const parts = match
      ?.slice(2)
      .map((part) => (part === undefined ? undefined : priceNumber.safeParse(part)));
    if (!match || !parts || parts.some((part) => part && !part.success))
      throw new ProvidersCliError(
        `--price ${flag}: expected MODEL=INPUT/OUTPUT[/CACHED], numbers per million tokens`,
      );
    const [input, output, cached] = parts.map((part) => part?.data);
    prices[match[1]!] = {
      input_per_million: input,
      output_per_million: output,
      ...(cached !== undefined ? { cached_input_per_million: cached } : {}),
    };
  }
  return prices;
}

/** The file with the flag's exchange rate, else as it was (a US-dollar wallet gets 1 by itself). */
function withRateFlag(config: Json, flag: string | undefined): Json {
  if (flag === undefined) return withExchangeRate(config, null);
  const parsed = z.coerce.number().positive().max(1_000_000).safeParse(flag);
  if (!parsed.success || !/^\d+(\.\d+)?$/.test(flag))
    throw new ProvidersCliError(
      `--exchange-rate ${flag}: expected a positive number (wallet currency units per US dollar)`,
    );
  return withExchangeRate(config, parsed.data);
}

function readConfig(file: string, create: boolean): Json {
  if (!existsSync(file)) {
    if (create) return {};
    throw new ProvidersCliError(`config file ${file} does not exist`);
  }
  if (statSync(file).size > MAX_CONFIG_BYTES)
    throw new ProvidersCliError(`config file ${file} is over ${MAX_CONFIG_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ProvidersCliError(`config file ${file}: not valid JSON: ${(error as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ProvidersCliError(`config file ${file}: not a JSON object`);
  return parsed as Json;
}

/** The file as the gateway will load it, or the schema's complaints, field by field. */
function checked(config: Json, file: string): Json {
  const result = configSchema.safeParse(config);
  if (!result.success)
    throw new ProvidersCliError(
      result.error.issues
        .map((issue) => `${file}: ${issue.path.join('.') || '(top level)'}: ${issue.message}`)
        .join('\n'),
    );
  return config;
}

function writeConfig(file: string, config: Json): void {
  const temp = `${file}.${process.pid}.tmp`;
  const mode = existsSync(file) ? statSync(file).mode & 0o777 : 0o644;
  writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode });
  renameSync(temp, file);
}

/** The chain as the gateway will serve it: order, keys' variables (set or not), each tier's model and price. */
function describeChain(config: Json, env: NodeJS.ProcessEnv): string {
  const parsed = configSchema.parse(config);
  const chain = parsed.chat.providers;
  const lines: string[] = [];
  if (!chain.chain.length)
    lines.push('no model providers: every tier is answered by the built-in offline engine');
  chain.chain.forEach((entry: ProviderEntry, index: number) => {
    const { base_url, api_key_env } = resolvedProvider(entry);
    const key = api_key_env
      ? `key in $${api_key_env} (${env[api_key_env] ? 'set' : 'NOT SET'})`
      : 'no key';
    lines.push(
      `${index + 1}. ${entry.name}: ${providerKind(entry.kind).label} at ${base_url}, ${key}`,
    );
  });
  for (const id of TIER_IDS) {
    const tier = parsed.chat.models[id];
    const targets = tier.targets.map((target) => {
      const price = tier.target_prices[target];
      if (!price) return target === 'builtin' ? 'builtin (offline, free)' : target;
      if (price.unpriced) return `${target} (UNPRICED: answers cost 0)`;
      const unit = (micros: number) => microsToUnits(micros);
      return `${target} (${unit(price.input_micros_per_million)}/${unit(price.output_micros_per_million)} ${parsed.currency} per 1M in/out)`;
    });
    lines.push(`${id}: ${targets.join(' -> ')}`);
  }
  const info = catalogueInfo();
  const rate = parsed.chat.pricing.exchange_rate;
  lines.push(
    `prices: ${info.source}, updated ${info.source_updated ?? info.generated}` +
      (rate !== null ? `, at ${rate} ${parsed.currency} per US dollar` : ''),
  );
  return `${lines.join('\n')}\n`;
}
