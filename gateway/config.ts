// One zod schema for the whole configuration. Precedence: built-in defaults < config file
// (AIHUB_CONFIG or --config) < environment < command-line flags. Every field has a default,
// so no configuration at all is the embedded default: built-in engines and sandbox providers.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { keysConfigSchema } from './accounts/key-limits.js';
import { chatConfigSchema } from './chat/config.js';
import { NATIVE_PROTOCOLS } from './chat/protocols/index.js';
import { paymentsConfigSchema } from './payments/config.js';
import { telemetryConfigSchema } from './telemetry/config.js';
import { topupsConfigSchema } from './topups/config.js';

export const configSchema = z
  .strictObject({
    port: z.number().int().min(0).max(65535).default(8787),
    host: z.string().min(1).default('127.0.0.1'),
    data_dir: z.string().min(1).default('./.aihub'),
    /** postgres://... : every table, the ledger and history in PostgreSQL (any number of gateways); unset: the JSON-file store in data_dir. */
    database_url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional(),
    /** Absolute URL used in links (the top-up link). Defaults to http://host:port. */
    public_url: z.url().optional(),
    /** Unset: derived (see resolveMode): sandbox only while nothing real can be reached. */
    mode: z.enum(['sandbox', 'live']).optional(),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be a three-letter currency code')
      .default('INR'),
    /** Express "trust proxy": false (default) uses the socket address as the client IP. */
    trust_proxy: z.union([z.boolean(), z.number().int().min(0), z.string()]).default(false),
    log_level: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
    limits: z
      .strictObject({
        body_bytes: z
          .number()
          .int()
          .min(1024)
          .max(64 * 1024 * 1024)
          .default(1024 * 1024),
        shutdown_grace_ms: z.number().int().min(0).max(600_000).default(10_000),
        /** From a request's head to the last byte of its body; past it: 408 and the connection closed. */
        body_timeout_ms: z.number().int().min(100).max(600_000).default(30_000),
        /** Open connections the gateway serves, in all and per client address (see http/connections.ts). */
        connections: z
          .strictObject({
            max: z.number().int().min(1).max(1_000_000).default(1_024),
            per_address: z.number().int().min(1).max(1_000_000).default(64),
            /** Addresses held to the total cap only: IP addresses, or "loopback" (127.0.0.0/8, ::1). */
            exempt: z
              .array(z.union([z.literal('loopback'), z.union([z.ipv4(), z.ipv6()])]))
              .max(100)
              .default(['loopback']),
          })
          .prefault({}),
      })
      .prefault({}),
    chat: chatConfigSchema.prefault({}),
    /** Per-key limits (issue #39): their periods' time zone, as an offset from UTC (India's by default). */
    keys: keysConfigSchema.prefault({}),
    payments: paymentsConfigSchema.prefault({}),
    /** Live top-ups through a payment gateway (topups/config.ts); secrets from the environment only. */
    topups: topupsConfigSchema.prefault({}),
    /** OpenTelemetry traces and metrics over OTLP/HTTP (telemetry/config.ts); off by default, on with OTEL_EXPORTER_OTLP_ENDPOINT too. */
    telemetry: telemetryConfigSchema.prefault({}),
    /** HTTPS on the gateway's own port, for deployments without a proxy: PEM files, re-read on SIGHUP. */
    tls: z
      .strictObject({
        cert_file: z.string().min(1).optional(),
        key_file: z.string().min(1).optional(),
      })
      .refine(
        (tls) => (tls.cert_file === undefined) === (tls.key_file === undefined),
        'cert_file and key_file go together: set both or neither',
      )
      .prefault({}),
    store: z
      .strictObject({
        checkpoint_every_records: z.number().int().min(1).max(10_000_000).default(20_000),
        checkpoint_interval_ms: z.number().int().min(100).max(86_400_000).default(60_000),
        segment_bytes: z
          .number()
          .int()
          .min(4096)
          .max(1024 * 1024 * 1024)
          .default(64 * 1024 * 1024),
        /** Room kept on the data dir's disk for the journal (a file of zeros written ahead): a checkpoint or index run never takes it. */
        disk_reserve_bytes: z
          .number()
          .int()
          .min(0)
          .max(16 * 1024 * 1024 * 1024)
          .default(16 * 1024 * 1024),
        /** A warning in the log once the data dir's disk has less than this free. */
        disk_warn_free_bytes: z
          .number()
          .int()
          .min(0)
          .default(512 * 1024 * 1024),
        /** How often the disk's free space is looked at (the warning; writes resuming after a full disk). */
        disk_check_interval_ms: z.number().int().min(100).max(60_000).default(1_000),
      })
      .prefault({}),
  })
  .superRefine((config, ctx) => {
    // A target's native protocols are those whose folders say how to reach one (chat/protocols/).
    for (const [name, engine] of Object.entries(config.chat.engines)) {
      const protocols: readonly string[] = 'protocols' in engine ? engine.protocols : [];
      protocols.forEach((protocol, index) => {
        if (!NATIVE_PROTOCOLS.includes(protocol))
          ctx.addIssue({
            code: 'custom',
            path: ['chat', 'engines', name, 'protocols', index],
            message: `"${protocol}" is no protocol a target can speak natively (${NATIVE_PROTOCOLS.join(', ')})`,
          });
      });
    }
  });

export type Mode = 'sandbox' | 'live';

/** The configuration as the gateway runs with it: `mode` decided (see resolveMode). */
export type Config = Omit<z.output<typeof configSchema>, 'mode'> & {
  mode: Mode;
  /** Where the mode came from: the config file, AIHUB_MODE, or derived from what is configured. */
  mode_source: 'config' | 'env' | 'derived';
  /** Why, in words (logged at start). */
  mode_reason: string;
};

/**
 * The mode when none is set (AIHUB_MODE, `mode` in the config file): sandbox money (top-ups,
 * sandbox providers) only while nothing real can be reached, that is every chat engine is
 * `builtin`, every payments provider is a sandbox one and no SMS sender is configured. With
 * anything real configured the gateway starts live: a deployment that configured an upstream
 * and forgot the mode must not let anyone top up sandbox money and spend it on that upstream.
 */
export function resolveMode(
  config: z.output<typeof configSchema>,
  set: { value: Mode; source: 'config' | 'env' } | null,
): Pick<Config, 'mode' | 'mode_source' | 'mode_reason'> {
  if (set)
    return {
      mode: set.value,
      mode_source: set.source,
      mode_reason: set.source === 'env' ? 'AIHUB_MODE' : 'mode in the config file',
    };
  const real = realThingsConfigured(config);
  if (real.length === 0)
    return {
      mode: 'sandbox',
      mode_source: 'derived',
      mode_reason:
        'no mode set and nothing real configured (every chat engine builtin, every payments provider a sandbox)',
    };
  return {
    mode: 'live',
    mode_source: 'derived',
    mode_reason: `no mode set and ${real.join(', ')} configured: live (set "mode": "sandbox" or AIHUB_MODE=sandbox to allow sandbox top-ups beside it)`,
  };
}

/** What in the configuration reaches something real: non-builtin engines, non-sandbox providers, an SMS sender, a top-up gateway. */
function realThingsConfigured(config: z.output<typeof configSchema>): string[] {
  const real: string[] = [];
  for (const [name, engine] of Object.entries(config.chat.engines))
    if (engine.type !== 'builtin') real.push(`chat engine ${name} (${engine.type})`);
  for (const [service, list] of Object.entries(config.payments.providers))
    for (const provider of list as ReadonlyArray<{ type: string; name: string }>)
      if (provider.type !== 'sandbox')
        real.push(`${service} provider ${provider.name} (${provider.type})`);
  if (config.payments.dmt.otp.sms) real.push('an SMS sender (payments.dmt.otp.sms)');
  if (config.topups.provider) real.push(`top-ups through ${config.topups.provider}`);
  return real;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface ConfigSources {
  env: NodeJS.ProcessEnv;
  flags: {
    port?: string | undefined;
    host?: string | undefined;
    data_dir?: string | undefined;
    config?: string | undefined;
    database_url?: string | undefined;
  };
}

function describe(error: z.ZodError, source: string): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.length ? issue.path.join('.') : '(top level)';
      const detail =
        issue.code === 'unrecognized_keys'
          ? `unknown field(s) ${(issue as { keys: string[] }).keys.join(', ')}`
          : issue.message;
      return `${source}: ${field}: ${detail}`;
    })
    .join('; ');
}

function portNumber(text: string, source: string): number {
  if (!/^\d{1,5}$/.test(text))
    throw new ConfigError(`${source}: expected a port number, got "${text}"`);
  return Number(text);
}

export function loadConfig({ env, flags }: ConfigSources): Config {
  const file = flags.config ?? env.AIHUB_CONFIG;
  let from_file: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`config file ${file}: ${(error as Error).message}`);
    }
    try {
      from_file = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new ConfigError(`config file ${file}: not valid JSON: ${(error as Error).message}`);
    }
    const checked = configSchema.safeParse(from_file);
    if (!checked.success) throw new ConfigError(describe(checked.error, `config file ${file}`));
  }
  const merged: Record<string, unknown> = { ...from_file };
  if (env.PORT) merged.port = portNumber(env.PORT, 'PORT');
  if (env.HOST) merged.host = env.HOST;
  if (env.AIHUB_DATA_DIR) merged.data_dir = env.AIHUB_DATA_DIR;
  if (env.AIHUB_DATABASE_URL) merged.database_url = env.AIHUB_DATABASE_URL;
  if (env.AIHUB_PUBLIC_URL) merged.public_url = env.AIHUB_PUBLIC_URL;
  if (env.AIHUB_MODE) merged.mode = env.AIHUB_MODE;
  if (env.AIHUB_LOG_LEVEL) merged.log_level = env.AIHUB_LOG_LEVEL;
  if (env.AIHUB_TLS_CERT_FILE || env.AIHUB_TLS_KEY_FILE) {
    const tls = (merged.tls ?? {}) as Record<string, unknown>;
    merged.tls = {
      ...tls,
      ...(env.AIHUB_TLS_CERT_FILE ? { cert_file: env.AIHUB_TLS_CERT_FILE } : {}),
      ...(env.AIHUB_TLS_KEY_FILE ? { key_file: env.AIHUB_TLS_KEY_FILE } : {}),
    };
  }
  if (flags.port !== undefined) merged.port = portNumber(flags.port, '--port');
  if (flags.host !== undefined) merged.host = flags.host;
  if (flags.data_dir !== undefined) merged.data_dir = flags.data_dir;
  if (flags.database_url !== undefined) merged.database_url = flags.database_url;
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success)
    throw new ConfigError(describe(parsed.error, 'configuration (file, environment or flags)'));
  const set = parsed.data.mode
    ? { value: parsed.data.mode, source: env.AIHUB_MODE ? ('env' as const) : ('config' as const) }
    : null;
  return { ...parsed.data, ...resolveMode(parsed.data, set) };
}
