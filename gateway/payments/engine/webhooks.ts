// Webhooks: each change of a transaction's status is POSTed to the account's URL, signed with
// `X-AIHub-Signature: hex(HMAC-SHA256(secret, raw body))`. Deliveries are an outbox in the
// store (enqueued in the same commit that changes the status), retried with capped
// exponential backoff up to a bounded number of attempts; every attempt is an API log record.
import { StoreUnavailableError } from '../../kernel/errors.js';
import { createHmac, randomBytes } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import type { Clock } from '../../kernel/clock.js';
import type { Logger } from '../../log.js';
import type { Store, Tx } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import type { Sealer } from '../../util/sealed.js';
import { webhookSecretAad } from '../sealing.js';
import type { PaymentsConfig } from '../config.js';
import { UNREAD, readThenPass, type PassRead } from './read-pass.js';
import { API_LOG, type PaymentTxn, type WebhookDelivery } from './tables.js';
import { backoffMs, txnView } from './transactions.js';

export const SIGNATURE_HEADER = 'x-aihub-signature';

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('hex')}`;
}

export function sign(secret: string, raw_body: string): string {
  return createHmac('sha256', secret).update(raw_body, 'utf8').digest('hex');
}

/**
 * Enqueues a delivery for a change of a transaction's status, `from` the one it had (inside
 * that change's commit): `transaction.<status>`, with `previous_status`.
 */
export function enqueueWebhook(
  tx: Tx,
  txn: PaymentTxn,
  from: PaymentTxn['status'],
): WebhookDelivery | null {
  const account = tx.get('accounts', txn.account_id);
  if (!account?.webhook) return null;
  const id = newId('whd');
  const created_at = tx.now.toISOString();
  const event = `transaction.${txn.status}`;
  const payload = JSON.stringify({
    id,
    event,
    created_at,
    previous_status: from,
    data: txnView(txn),
  });
  const delivery: WebhookDelivery = {
    id,
    account_id: txn.account_id,
    txn_id: txn.id,
    event,
    payload,
    attempts: 0,
    next_at: created_at,
    last_error: null,
    created_at,
  };
  tx.set('webhook_deliveries', id, delivery);
  return delivery;
}

// Loopback, private, link-local (cloud metadata), CGNAT, protocol-assignment, benchmarking,
// multicast, reserved and broadcast, unique-local and site-local, unspecified, and the NAT64
// local-use prefix (64:ff9b:1::/48, RFC 8215: its embedding is not fixed), Teredo, the
// documentation and discard-only prefixes. IPv6 forms that embed an IPv4 address are judged
// by that address (see isPrivateAddress).
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['64:ff9b:1::', 48],
  ['2001::', 32], // Teredo: it tunnels to an IPv4 address hidden (XOR-ed) in the last 32 bits
  ['2001:db8::', 32], // documentation
  ['100::', 64], // discard-only
] as const)
  PRIVATE.addSubnet(net, prefix, 'ipv6');

/**
 * The IPv4 address an IPv6 address carries and that a router would deliver to: IPv4-mapped
 * (::ffff:a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64
 * (64:ff9b::a.b.c.d, RFC 6052), and 6to4 (2002:AABB:CCDD::, RFC 3056). Null for any other.
 */
export function embeddedIpv4(address: string): string | null {
  const parts = ipv6Groups(address);
  if (!parts) return null;
  const zero = (from: number, to: number) => parts.slice(from, to).every((part) => part === 0);
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  if (zero(0, 5) && parts[5] === 0xffff) return v4(parts[6]!, parts[7]!);
  if (zero(0, 4) && parts[4] === 0xffff && parts[5] === 0) return v4(parts[6]!, parts[7]!);
  if (zero(0, 6)) return v4(parts[6]!, parts[7]!);
  if (parts[0] === 0x64 && parts[1] === 0xff9b && zero(2, 6)) return v4(parts[6]!, parts[7]!);
  if (parts[0] === 0x2002) return v4(parts[1]!, parts[2]!);
  return null;
}

/** The eight 16-bit groups of an IPv6 address, from the canonical text of Node's URL parser (hex groups, at most one `::`). */
function ipv6Groups(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return null; // a zone id (fe80::1%eth0) is no URL host
  }
  const [head, tail] = canonical.split('::') as [string, string | undefined];
  const groups = (text: string | undefined) =>
    text ? text.split(':').map((group) => parseInt(group, 16)) : [];
  const left = groups(head);
  const right = groups(tail);
  return tail === undefined
    ? left
    : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * True for an address a webhook must not reach. An IPv6 address that embeds an IPv4 one is
 * judged by the IPv4 address (so `[::127.0.0.1]`, `[64:ff9b::7f00:1]` and `[2002:7f00:1::]`
 * are loopback); `::` and `::1` themselves are in the IPv6 list.
 */
export function isPrivateAddress(address: string): boolean {
  const version = isIP(address);
  if (version === 0) return false;
  if (version === 4) return PRIVATE.check(address, 'ipv4');
  if (PRIVATE.check(address, 'ipv6')) return true;
  const inner = embeddedIpv4(address);
  return inner !== null && PRIVATE.check(inner, 'ipv4');
}

/** A DNS lookup that refuses private addresses: the check happens on the address actually connected to. */
function publicOnlyLookup(
  hostname: string,
  options: object,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the callback's arguments depend on `all`, as in node:dns's own overloads
  callback: (...args: any[]) => void,
): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error);
    const allowed = addresses.filter((a) => !isPrivateAddress(a.address));
    if (allowed.length === 0)
      return callback(
        Object.assign(new Error(`${hostname} resolves only to private addresses`), {
          code: 'EPRIVATE',
        }),
      );
    if ((options as { all?: boolean }).all) return callback(null, allowed);
    callback(null, allowed[0]!.address, allowed[0]!.family);
  });
}

const MAX_RESPONSE_BYTES = 16 * 1024;

/**
 * A webhook URL as API logs and reports show it: scheme, host, port and path, without the
 * userinfo (`user:password@`), the query or the fragment, which may carry credentials.
 */
export function loggableUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(not a URL)';
  }
}

/** POSTs JSON and resolves with the status code; rejects on transport errors, timeouts and (unless allow_private) private addresses. */
export function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeout_ms: number,
  allow_private: boolean,
): Promise<number> {
  const target = new URL(url);
  if (
    !allow_private &&
    isIP(target.hostname.replace(/^\[|\]$/g, '')) &&
    isPrivateAddress(target.hostname.replace(/^\[|\]$/g, ''))
  ) {
    return Promise.reject(new Error(`${target.hostname} is a private address`));
  }
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
        lookup: allow_private ? undefined : (publicOnlyLookup as never),
        timeout: timeout_ms,
      },
      (res: IncomingMessage) => {
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > MAX_RESPONSE_BYTES) res.destroy();
        });
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('close', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(res.statusCode ?? 0));
      },
    );
    const deadline = setTimeout(
      () => req.destroy(new Error(`no answer in ${timeout_ms} ms`)),
      timeout_ms,
    );
    req.on('close', () => clearTimeout(deadline));
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeout_ms} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

export class WebhookSender {
  private readonly due = new Set<string>();
  private readonly sending = new Set<string>();
  /** A pass on the PostgreSQL store is reading its due deliveries (one at a time). */
  private reading = false;
  /**
   * The transactions a delivery is being sent for: one at a time per transaction, in the order
   * their commits enqueued them (`due` keeps it), so a receiver gets a transaction's changes in
   * order. Sent side by side, a later change could overtake an earlier one (each attempt makes
   * its own round trips first: claim, read, durability); seen on PostgreSQL as `on_hold`
   * delivered before the `pending` committed ahead of it.
   */
  private readonly sending_txns = new Set<string>();
  private readonly work = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly deps: {
      store: Store;
      logger: Logger;
      clock: Clock;
      config: PaymentsConfig;
      mode: 'sandbox' | 'live';
      sealer: Sealer;
    },
  ) {
    void this.loadDue();
  }

  /** The deliveries waiting in the store at start (the table is small: deliveries leave once sent or given up). */
  private async loadDue(): Promise<void> {
    try {
      for await (const ids of this.deps.store.scan('webhook_deliveries'))
        for (const id of ids) this.due.add(id);
    } catch (error) {
      this.deps.logger.error({ msg: 'could not read the webhook deliveries waiting', err: error });
    }
  }

  get allow_private(): boolean {
    return this.deps.config.webhooks.allow_private_addresses ?? this.deps.mode === 'sandbox';
  }

  /** Several gateways on one database: the deliveries due that any of them enqueued (an indexed range). */
  async discover(): Promise<void> {
    const now = this.deps.clock.now().toISOString();
    for (const id of await this.deps.store.below('webhook_deliveries', 'next_at', now, 200))
      this.due.add(id);
  }

  /** Tells the sender about a delivery enqueued by a commit (after it is durable). */
  notify(id: string): void {
    this.due.add(id);
  }

  deliverDue(): void {
    if (this.stopped) return;
    const now_ms = this.deps.clock.now().getTime();
    const store = this.deps.store;
    // The due deliveries are read in one read run (PostgreSQL: those the cache lacks, found by
    // another gateway's discovery, loaded without stopping the event loop), then sent; with
    // everything in memory (null), read as the pass goes.
    if (this.reading) return;
    const ids = [...this.due].filter((id) => !this.sending.has(id));
    const read = readThenPass(store, 'webhook_deliveries', ids, (rows) =>
      this.deliverWith(now_ms, rows),
    );
    if (!read) return;
    this.reading = true;
    const pass = read
      .catch((error: unknown) => {
        // A refusal by the store is part of its outage, logged by the store.
        if (!(error instanceof StoreUnavailableError))
          this.deps.logger.warn({ msg: 'due webhook deliveries not read', err: error });
      })
      .finally(() => {
        this.reading = false;
        this.work.delete(pass);
      });
    this.work.add(pass);
  }

  /** One pass over the due deliveries, each read with `read` (UNREAD: due after the read, next pass). */
  private deliverWith(now_ms: number, read: PassRead<'webhook_deliveries'>): void {
    if (this.stopped) return;
    for (const id of this.due) {
      if (this.sending.size >= this.deps.config.webhooks.concurrency) return;
      if (this.sending.has(id)) continue;
      const delivery = read(id);
      if (delivery === UNREAD) continue;
      if (!delivery) {
        this.due.delete(id);
        continue;
      }
      if (Date.parse(delivery.next_at) > now_ms) continue;
      if (this.sending_txns.has(delivery.txn_id)) continue;
      this.sending.add(id);
      this.sending_txns.add(delivery.txn_id);
      const work = this.attempt(delivery)
        .catch((error: unknown) =>
          this.deps.logger.error({
            msg: 'webhook delivery failed unexpectedly',
            delivery_id: id,
            err: error,
          }),
        )
        .finally(() => {
          this.sending.delete(id);
          this.sending_txns.delete(delivery.txn_id);
          this.work.delete(work);
        });
      this.work.add(work);
    }
  }

  /**
   * One attempt. Several gateways: claimed first (one gateway sends a delivery at a time; the
   * claim lapses with its gateway) and read again once claimed (another may have sent it).
   */
  private async attempt(seen: WebhookDelivery): Promise<void> {
    const { store } = this.deps;
    const lease_ms = this.deps.config.webhooks.timeout_ms + 60_000;
    await store.withClaim(
      { kind: 'webhook', id: seen.id, lease_ms },
      seen,
      async () => {
        const delivery = await store.fetch('webhook_deliveries', seen.id);
        if (!delivery) {
          this.due.delete(seen.id);
          return null;
        }
        return Date.parse(delivery.next_at) <= this.deps.clock.now().getTime() ? delivery : null;
      },
      (delivery) => this.attemptClaimed(delivery),
    );
  }

  private async attemptClaimed(delivery: WebhookDelivery): Promise<void> {
    const { store, config, clock, logger } = this.deps;
    await store.readDurable(); // never announce a status before its commit is durable
    const account = store.get('accounts', delivery.account_id);
    if (!account?.webhook) {
      await store.transact((tx) => tx.del('webhook_deliveries', delivery.id));
      this.due.delete(delivery.id);
      return;
    }
    const { url } = account.webhook;
    const secret = this.deps.sealer.openText(account.webhook.secret, webhookSecretAad(account.id));
    const attempt = delivery.attempts + 1;
    const started_ms = clock.now().getTime();
    let status = 0;
    let error_text: string | null = null;
    try {
      status = await postWebhook(
        url,
        delivery.payload,
        {
          'user-agent': 'AIHub-Webhooks/1',
          [SIGNATURE_HEADER]: sign(secret, delivery.payload),
          'x-aihub-event': delivery.event,
          'x-aihub-delivery': delivery.id,
          'x-aihub-attempt': String(attempt),
        },
        config.webhooks.timeout_ms,
        this.allow_private,
      );
      if (status < 200 || status >= 300) error_text = `HTTP ${status}`;
    } catch (error) {
      error_text = (error as Error).message.slice(0, 300);
    }
    const latency_ms = clock.now().getTime() - started_ms;
    const delivered = error_text === null;
    const gave_up = !delivered && attempt >= config.webhooks.max_attempts;
    const outcome = { url, status, latency_ms, attempt, error_text, delivered, gave_up };
    await store.transact((tx) => this.record(tx, delivery, outcome));
    if (delivered || gave_up) this.due.delete(delivery.id);
    if (gave_up)
      logger.warn({
        msg: 'webhook delivery abandoned after its last attempt',
        delivery_id: delivery.id,
        txn_id: delivery.txn_id,
        attempts: attempt,
      });
  }

  /** In the attempt's commit: its log line, then the delivery dropped (done or given up) or
   * rescheduled after its backoff. */
  private record(
    tx: Tx,
    delivery: WebhookDelivery,
    outcome: {
      url: string;
      status: number;
      latency_ms: number;
      attempt: number;
      error_text: string | null;
      delivered: boolean;
      gave_up: boolean;
    },
  ): void {
    const { config } = this.deps;
    const { url, status, latency_ms, attempt, error_text, delivered, gave_up } = outcome;
    tx.history({
      type: API_LOG,
      ts: tx.now.toISOString(),
      direction: 'outbound',
      kind: 'webhook',
      account_id: delivery.account_id,
      txn_id: delivery.txn_id,
      delivery_id: delivery.id,
      event: delivery.event,
      method: 'POST',
      // Never the URL's userinfo or query (a token there would leak into reports): scheme, host, path.
      url: loggableUrl(url),
      status,
      latency_ms,
      attempt,
      result: delivered ? 'delivered' : gave_up ? 'gave_up' : 'will_retry',
      ...(error_text ? { error: error_text } : {}),
    });
    if (delivered || gave_up) {
      tx.del('webhook_deliveries', delivery.id);
      return;
    }
    const delay_ms = backoffMs(
      attempt - 1,
      config.webhooks.first_retry_ms,
      config.webhooks.max_backoff_ms,
    );
    tx.set('webhook_deliveries', delivery.id, {
      ...delivery,
      attempts: attempt,
      last_error: error_text,
      next_at: new Date(tx.now.getTime() + delay_ms).toISOString(),
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    while (this.work.size > 0) await Promise.all([...this.work]);
  }
}
