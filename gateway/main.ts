// The `aihub-gateway` command: `serve` (the default) and `verify`.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { createGateway } from './app.js';
import { createAccounts } from './accounts/index.js';
import { compileTrustProxy, type TrustProxy } from './accounts/ip-whitelist.js';
import { createChat } from './chat/index.js';
import { PROTOCOL_NAMES } from './chat/protocols/index.js';
import { providersCommand, ProvidersCliError } from './cli/providers.js';
import { gatewayId, Metrics } from './http/metrics.js';
import { createDashboard } from './web/router.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { systemClock } from './kernel/clock.js';
import { createLogger, type Logger } from './log.js';
import { planTelemetry, TelemetryConfigError, type TelemetryPlan } from './telemetry/config.js';
import { startTelemetry, stopTelemetry } from './telemetry/index.js';
import { sha256Hex } from './accounts/keys.js';
import type { Store } from './store/types.js';
import { createLlm } from './llm/index.js';
import { createPayments } from './payments/index.js';
import { createTopups, type Topups } from './topups/index.js';
import type { RoomDeps } from './deps.js';
import { TopupConfigError } from './topups/providers/deps.js';
import { createProviders } from './providers/index.js';
import { createHttpServer, HttpsServer, type TlsFiles } from './http/server.js';
import { statementsCheck } from './payments/statements/verify-check.js';
import { GstDocumentsCheck } from './payments/invoices/verify.js';
import {
  IS_BLOCKING_WORKER,
  migrateStore,
  openStore as openConfiguredStore,
  redactUrl,
  storeDisk,
  verifyStore,
} from './store/open.js';
import { PAYMENT_HISTORY_TAGS } from './payments/history-tags.js';
import { join } from 'node:path';
import { KEY_FILE, loadKeyRing, writeKeyFile, type KeyRing } from './store/encryption-key.js';
import { newKey, SealError, Sealer } from './util/sealed.js';
import { refingerprintSubmissions, resealDocuments, resealSecrets } from './payments/sealing.js';

const USAGE = `Usage: aihub-gateway [serve] [--port N] [--host H] [--data-dir D] [--config FILE]
       aihub-gateway verify [--data-dir D] [--full] | verify --database-url URL
       aihub-gateway migrate --from-data-dir D --database-url URL   (moves a JSON-file store into PostgreSQL, then checks both sides equal)
       aihub-gateway migrate --database-url URL   (moves the store of an earlier PostgreSQL layout into this version's tables, then checks)
       aihub-gateway rotate-key [--data-dir D] [--database-url URL]   (that gateway stopped: re-seal secrets and eKYC documents under a new key)
       aihub-gateway providers add|list|remove ...   (the model providers in the config file; providers --help)

Environment: PORT, HOST, AIHUB_DATA_DIR, AIHUB_CONFIG, AIHUB_ADMIN_TOKEN (32+ characters),
AIHUB_PUBLIC_URL, AIHUB_MODE (sandbox|live; unset: sandbox only while every engine is builtin and
every payments provider a sandbox, else live), AIHUB_LOG_LEVEL, AIHUB_TLS_CERT_FILE and
AIHUB_TLS_KEY_FILE (serve HTTPS; SIGHUP reloads them), AIHUB_ENCRYPTION_KEY and
AIHUB_ENCRYPTION_OLD_KEYS (64 hex digits each; default: the data dir's encryption.key),
AIHUB_DATABASE_URL (postgres://...: the PostgreSQL store, any number of gateways; flag --database-url),
AIHUB_GATEWAY_ID (this gateway's name in /metrics and /healthz; default hostname:pid). Flags win over the environment, which
wins over the config file.`;

function fail(message: string, code: number): never {
  process.stderr.write(`aihub-gateway: ${message}\n`);
  process.exit(code);
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'providers') return providers(argv.slice(1));
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'data-dir': { type: 'string' },
        'database-url': { type: 'string' },
        'from-data-dir': { type: 'string' },
        config: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        full: { type: 'boolean' },
      },
    });
  } catch (error) {
    fail(`${(error as Error).message}\n${USAGE}`, 2);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const command = positionals[0] ?? 'serve';
  let config: Config;
  try {
    config = loadConfig({
      env: process.env,
      flags: {
        port: values.port,
        host: values.host,
        data_dir: values['data-dir'],
        config: values.config,
        database_url: values['database-url'],
      },
    });
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message, 2);
    throw error;
  }
  if (command === 'verify') return verify(config, values.full === true);
  if (command === 'migrate') return migrate(values['from-data-dir'], config.database_url);
  if (command === 'rotate-key') return rotateKey(config);
  if (command !== 'serve') fail(`unknown command "${command}"\n${USAGE}`, 2);
  return serve(config);
}

function providers(argv: string[]): void {
  try {
    providersCommand(argv, process.env, (text) => process.stdout.write(text));
  } catch (error) {
    if (error instanceof ProvidersCliError) fail(`providers: ${error.message}`, 2);
    throw error;
  }
}

/** The rooms' own checks of the books: the statements and the GST documents against the postings. */
const verifyChecks = () => [statementsCheck(), new GstDocumentsCheck()];

/** `verify`: the books of the data dir (`full`: from the first record), or of the database. */
async function verify(config: Config, full: boolean): Promise<void> {
  const where = config.database_url ? redactUrl(config.database_url) : config.data_dir;
  let report;
  try {
    report = await verifyStore(config, { full, checks: verifyChecks() });
  } catch (error) {
    fail(`verify ${where}: ${(error as Error).message}`, 1);
  }
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (!report.ok) {
    process.stderr.write(
      `aihub-gateway verify: ${report.breaches.length} invariant breach(es) in ${where}\n`,
    );
    process.exit(1);
  }
}

async function migrate(
  from_data_dir: string | undefined,
  database_url: string | undefined,
): Promise<void> {
  if (!database_url) fail(`migrate needs --database-url URL (or AIHUB_DATABASE_URL)\n${USAGE}`, 2);
  let report;
  const from = from_data_dir ?? 'its earlier layout';
  try {
    report = await migrateStore(from_data_dir, database_url, PAYMENT_HISTORY_TAGS);
  } catch (error) {
    fail(`migrate ${from} to ${redactUrl(database_url)}: ${(error as Error).message}`, 1);
  }
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (!report.ok) {
    process.stderr.write(
      `aihub-gateway migrate: the two sides differ: ${report.differences.join('; ')}\n`,
    );
    process.exit(1);
  }
}

/** Admin tokens shorter than this are refused at start: the admin API moves money. */
export const MIN_ADMIN_TOKEN_CHARS = 32;

async function serve(config: Config): Promise<void> {
  checkAdminToken(process.env.AIHUB_ADMIN_TOKEN);
  const tls = loadTls(config);
  const trust_proxy = loadTrustProxy(config);
  const telemetry = planTelemetryOrFail(config);
  const logger = createLogger(config.log_level, undefined, { trace_ids: telemetry !== null });
  // Said before anything else: in sandbox mode anyone may top up simulated money.
  logger.info({ msg: `${config.mode} mode`, mode: config.mode, why: config.mode_reason });
  const store = await openStore(config, (message, fields) =>
    logger.warn({ ...fields, msg: message }),
  );
  const sealer = await openSecrets(store, config.data_dir, logger);

  const admin_token_hash = await adminTokenHash(store);
  const clock = systemClock;
  let public_url = ''; // computed once, when the port is known (port 0 picks one at listen time)
  const metrics = new Metrics();
  metrics.watchStore(() => store.sharedStats());
  const disk = storeDisk(store);
  if (disk) metrics.watchDisk(disk);
  const room_deps = {
    config,
    store,
    logger,
    clock,
    admin_token_hash,
    sealer,
    metrics,
    public_url: () => public_url,
  };
  // Every room is built here; app.ts mounts what they return.
  const providers = createProviders(room_deps);
  const llm = createLlm(room_deps);
  const topups = await topupsOrFail(room_deps);
  const payments = createPayments(room_deps, {
    providers: providers.lists,
    sms: providers.sms,
    api: [topups.api],
    prune: topups.prune,
    ai_protocols: PROTOCOL_NAMES,
  });
  const accounts = createAccounts(room_deps, {
    payment_services: payments.services.map((service) => service.code),
  });
  const chat = createChat(room_deps, { engines: llm.engines, trust_proxy });
  const dashboard = createDashboard({ ...room_deps, payments, topups });
  const gateway = createGateway(
    {
      config,
      logger,
      metrics,
      trust_proxy,
      public_url: room_deps.public_url,
      readiness: () => notReady(store, chat),
    },
    { accounts, chat, dashboard, payments, topups },
  );
  await startTelemetry(telemetry, {
    engines: config.chat.engines,
    registry: metrics.registry,
    warn: (message) => logger.warn({ msg: message }),
    instance_id: metrics.gateway_id,
  });
  const server = createHttpServer(
    gateway.handler,
    tls,
    config.limits,
    metrics.watchConnections(logger),
  );
  server.listen(config.port, config.host);
  try {
    await once(server, 'listening');
  } catch (error) {
    await store.close();
    fail(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`, 1);
  }
  const address = server.address();
  if (address && typeof address === 'object') config.port = address.port;
  public_url = publicUrl(config);
  logListening(logger, config, public_url, tls !== null);
  if (server instanceof HttpsServer) reloadTlsOnSighup(server, config, logger);
  payments.start(); // status checks of pending transactions (also those from before a restart), webhooks
  topups.start(); // the reconciliation pass: top-ups whose webhook was lost

  stopOnSignals(server, config, logger, async () => {
    await payments.stop(); // provider calls still in flight stay pending, for the status checks after restart
    await topups.stop();
    await chat.close();
    await llm.close(); // upstream connection pools
    await store.close();
    await stopTelemetry(); // the spans of the last requests, within a bound
  });
}

/** What OpenTelemetry exports (null: nothing, the default), or the start refused naming the setting. */
function planTelemetryOrFail(config: Config): TelemetryPlan | null {
  try {
    return planTelemetry(config.telemetry);
  } catch (error) {
    if (!(error instanceof TelemetryConfigError)) throw error;
    fail(error.message, 2);
  }
}

/** The top-ups room, or the start refused naming what is missing (a provider's secret). */
async function topupsOrFail(deps: RoomDeps): Promise<Topups> {
  try {
    return createTopups(deps);
  } catch (error) {
    if (!(error instanceof TopupConfigError)) throw error;
    await deps.store.close();
    fail(error.message, 2);
  }
}

/** Why the gateway cannot serve now (`/readyz`): the store cannot commit, or every upstream's breaker is open. */
async function notReady(store: Store, chat: ReturnType<typeof createChat>): Promise<string[]> {
  const reasons: string[] = [];
  const store_ready = await store.readiness();
  if (!store_ready.ready) reasons.push(store_ready.reason);
  const breakers = Object.entries(chat.breakerStates());
  if (breakers.length > 0 && breakers.every(([, state]) => state === 'open'))
    reasons.push(
      `every upstream's circuit breaker is open (${breakers.map(([name]) => name).join(', ')})`,
    );
  return reasons;
}

/** The line tests and the extension wait for: where the gateway listens, and in which mode. */
function logListening(logger: Logger, config: Config, url: string, tls: boolean): void {
  logger.info({
    msg: 'listening',
    host: config.host,
    port: config.port,
    url,
    data_dir: config.data_dir,
    mode: config.mode,
    mode_source: config.mode_source,
    tls,
  });
}

/**
 * On SIGTERM or SIGINT: stop accepting, let open requests finish (cut after the grace), then
 * close the rooms (`closeRooms`, in its order) and exit 0.
 */
function stopOnSignals(
  server: ReturnType<typeof createHttpServer>,
  config: Config,
  logger: Logger,
  closeRooms: () => Promise<void>,
): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ msg: 'shutting down', signal });
    const closed = once(server, 'close');
    server.close();
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), config.limits.shutdown_grace_ms);
    force.unref();
    await closed;
    await closeRooms();
    logger.info({ msg: 'stopped' });
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** The absolute base URL for links shown to users (e.g. the top-up page). */
function publicUrl(config: Config): string {
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return (
    config.public_url ?? `${config.tls.cert_file ? 'https' : 'http'}://${host}:${config.port}`
  ).replace(/\/+$/, '');
}

/** The config's trust_proxy compiled once, for Express and the /v1 lane alike; exit 2 on a bad address. */
function loadTrustProxy(config: Config): TrustProxy {
  try {
    return compileTrustProxy(config.trust_proxy);
  } catch (error) {
    fail(`trust_proxy ${JSON.stringify(config.trust_proxy)}: ${(error as Error).message}`, 2);
  }
}

/** Exit 2 on an admin token that is too short to stand a guess (or could never be sent). */
function checkAdminToken(token: string | undefined): void {
  if (!token || (token.length >= MIN_ADMIN_TOKEN_CHARS && !/\s/.test(token))) return;
  fail(
    `AIHUB_ADMIN_TOKEN must be at least ${MIN_ADMIN_TOKEN_CHARS} characters with no spaces (it has ${token.length}); ` +
      `make one with: node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))"`,
    2,
  );
}

function loadTls(config: Config): TlsFiles | null {
  if (!config.tls.cert_file || !config.tls.key_file) return null;
  try {
    return readTlsFiles(config.tls.cert_file, config.tls.key_file);
  } catch (error) {
    fail((error as Error).message, 2);
  }
}

/** SIGHUP: new certificate and key for new connections; the listener and open connections stay. */
function reloadTlsOnSighup(server: HttpsServer, config: Config, logger: Logger): void {
  const { cert_file, key_file } = config.tls as { cert_file: string; key_file: string };
  process.on('SIGHUP', () => {
    try {
      server.setSecureContext(readTlsFiles(cert_file, key_file));
      logger.info({ msg: 'tls certificate reloaded', cert_file });
    } catch (error) {
      logger.error({
        msg: 'tls reload failed; still serving the previous certificate',
        err: error,
      });
    }
  });
}

/** The data dir's sealer, after sealing what an older gateway (or an older key) left behind. */
async function openSecrets(store: Store, data_dir: string, logger: Logger): Promise<Sealer> {
  const { sealer, source } = await openSealer(store, data_dir);
  let resealed = 0;
  try {
    resealed = await resealSecrets(store, sealer);
    await refingerprintSubmissions(store, sealer);
  } catch (error) {
    await store.close();
    if (error instanceof SealError)
      fail(`${error.message}; start with the old key in AIHUB_ENCRYPTION_OLD_KEYS`, 2);
    throw error;
  }
  try {
    await checkDatabaseKey(store, sealer);
  } catch (error) {
    await store.close();
    if (error instanceof SealError) fail(error.message, 2);
    throw error;
  }
  if (source === 'generated')
    logger.info({ msg: 'generated the encryption key', file: join(data_dir, KEY_FILE) });
  if (resealed > 0)
    logger.info({ msg: 'sealed secrets under the current encryption key', accounts: resealed });
  return sealer;
}

const KEY_CHECK_TEXT = 'aihub-encryption-key-check';
const KEY_CHECK_AAD = 'key_check:database';

/**
 * Several gateways on one database must share the encryption key: a gateway started with
 * another key runs, then fails (500) on every secret the others sealed. So the database keeps
 * one value sealed with the deployment's key (the first gateway's, re-sealed under the current
 * key when it changes, as the secrets are), and a gateway whose keys cannot open it refuses to
 * start (SealError, exit 2, the fix named). Nothing to do on the JSON-file store.
 */
async function checkDatabaseKey(store: Store, sealer: Sealer): Promise<void> {
  const sealed = () => sealer.sealText(KEY_CHECK_TEXT, KEY_CHECK_AAD);
  const stored = await store.sharedKeyCheck(sealed());
  if (stored === null) return;
  let opened: string;
  try {
    opened = sealer.openText(stored, KEY_CHECK_AAD);
  } catch (error) {
    throw new SealError(
      `this gateway's encryption key cannot open the database's key check (${(error as Error).message}): every gateway on one database needs the same AIHUB_ENCRYPTION_KEY; start this one with the others' key (during a rotation, the old key in AIHUB_ENCRYPTION_OLD_KEYS)`,
    );
  }
  if (opened !== KEY_CHECK_TEXT)
    throw new SealError("the database's encryption-key check holds something else");
  if (!sealer.isCurrentText(stored)) await store.sharedKeyCheck(sealed(), true);
}

/** Opens the store the config names; a store that cannot open is a one-line exit naming why. */
async function openStore(
  config: Config,
  warn: (message: string, fields?: Record<string, unknown>) => void,
): Promise<Store> {
  try {
    return await openConfiguredStore(config, {
      gateway_id: gatewayId(process.env),
      env: process.env,
      history_tags: PAYMENT_HISTORY_TAGS,
      warn,
    });
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'LockedError' || name === 'CorruptStoreError' || name === 'DiskFullError')
      fail((error as Error).message, 1);
    if (name === 'DataDirModeError') fail((error as Error).message, 2);
    if (config.database_url)
      fail(
        `cannot open the database ${redactUrl(config.database_url)}: ${(error as Error).message}`,
        1,
      );
    throw error;
  }
}

/** The sealer of the data dir's key ring (exit 2 on a malformed key, after closing the store). */
async function openSealer(
  store: Store,
  data_dir: string,
): Promise<{ sealer: Sealer; source: KeyRing['source'] }> {
  try {
    const ring = loadKeyRing(data_dir, process.env);
    return { sealer: new Sealer(ring.keys), source: ring.source };
  } catch (error) {
    await store.close();
    if (error instanceof SealError) fail(error.message, 2);
    throw error;
  }
}

/**
 * `aihub-gateway rotate-key`: re-seals every secret and eKYC document under a new key, with
 * the gateway stopped (it takes the data dir's lock). With the key in the data dir, a new key
 * is generated and written first, next to the old one, so a crash half-way leaves both and
 * a second run finishes; the old key is dropped once everything is re-sealed. With
 * AIHUB_ENCRYPTION_KEY, that is the new key and AIHUB_ENCRYPTION_OLD_KEYS names the old.
 */
async function rotateKey(config: Config): Promise<void> {
  const store = await openStore(config, (message) => process.stderr.write(`${message}\n`));
  try {
    const { sealer: before, source } = await openSealer(store, config.data_dir);
    let sealer = before;
    let ring = loadKeyRing(config.data_dir, process.env).keys;
    if (source !== 'env') {
      ring = [newKey(), ...ring];
      writeKeyFile(config.data_dir, ring);
      sealer = new Sealer(ring);
    }
    const accounts = await resealSecrets(store, sealer);
    await refingerprintSubmissions(store, sealer);
    await checkDatabaseKey(store, sealer); // the database's key check, under the new key
    const documents = await resealDocuments(store, sealer, config.data_dir, {
      elsewhere: config.database_url !== undefined,
    });
    if (source !== 'env') writeKeyFile(config.data_dir, [ring[0]!]);
    process.stdout.write(
      `${JSON.stringify({
        key_id: sealer.current_id,
        key_source: source === 'env' ? 'AIHUB_ENCRYPTION_KEY' : join(config.data_dir, KEY_FILE),
        accounts_resealed: accounts,
        documents_resealed: documents.resealed,
        ...(config.database_url ? { documents_elsewhere: documents.elsewhere } : {}),
      })}\n`,
    );
  } catch (error) {
    await store.close();
    if (error instanceof SealError) fail(error.message, 1);
    throw error;
  }
  await store.close();
}

/** Reads and checks a PEM certificate (chain) and its key; throws a message naming the file. */
function readTlsFiles(cert_file: string, key_file: string): TlsFiles {
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new Error(`tls.${what} ${file}: ${(error as Error).message}`, { cause: error });
    }
  };
  const files = { cert: read(cert_file, 'cert_file'), key: read(key_file, 'key_file') };
  try {
    createSecureContext(files); // a bad PEM or a key that does not match the certificate fails here
  } catch (error) {
    throw new Error(
      `tls: ${cert_file} and ${key_file} do not make a certificate and its key: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return files;
}

/** The admin token from AIHUB_ADMIN_TOKEN, else the stored hash, else a new token printed once. */
async function adminTokenHash(store: Store): Promise<string> {
  const from_env = process.env.AIHUB_ADMIN_TOKEN;
  if (from_env) return sha256Hex(from_env);
  const stored = store.state.meta.admin_token_hash;
  if (stored) return stored;
  const token = `aihub-admin-${randomBytes(24).toString('base64url')}`;
  const hash = sha256Hex(token);
  await store.transact((tx) => tx.setAdminTokenHash(hash));
  process.stderr.write(`AIHub admin token (shown once; only its hash is stored): ${token}\n`);
  return hash;
}

// The bundle also runs as the PostgreSQL store's worker thread for blocking loads (store/pg/blocking.ts).
if (!IS_BLOCKING_WORKER)
  main(process.argv.slice(2)).catch((error) => {
    process.stderr.write(`aihub-gateway: ${(error as Error).stack ?? error}\n`);
    process.exit(1);
  });
