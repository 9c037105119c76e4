// What the payments room keeps encrypted at rest (util/sealed.ts): webhook secrets, request
// signing secrets and eKYC documents, each bound to its place by its additional data. Start-up
// seals what an older gateway left in plaintext (or under an older key); `aihub-gateway
// rotate-key` also re-seals every document.
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import type { Store } from '../store/types.js';
import type { Account } from '../store/state.js';
import { fsyncDirectory } from '../store/fs-durable.js';
import type { Sealer } from '../util/sealed.js';
import type { KycDocument } from './engine/tables.js';
import { AADHAAR_FINGERPRINT } from './identity/duplicates.js';

export const webhookSecretAad = (account_id: string) => `webhook_secret:${account_id}`;
export const signingSecretAad = (account_id: string) => `signing_secret:${account_id}`;
export const documentAad = (path: string) => `kyc_document:${path}`;

const BATCH = 500;

/** The account with its secrets sealed under the current key, or null when nothing needs to change. */
function resealed(account: Account, sealer: Sealer): Account | null {
  let next: Account | null = null;
  if (account.webhook && !sealer.isCurrentText(account.webhook.secret)) {
    const secret = sealer.sealText(
      sealer.openText(account.webhook.secret, webhookSecretAad(account.id)),
      webhookSecretAad(account.id),
    );
    next = { ...account, webhook: { ...account.webhook, secret } };
  }
  if (account.signing && !sealer.isCurrentText(account.signing.secret)) {
    const secret = sealer.sealText(
      sealer.openText(account.signing.secret, signingSecretAad(account.id)),
      signingSecretAad(account.id),
    );
    next = { ...(next ?? account), signing: { ...account.signing, secret } };
  }
  return next;
}

/** Seals every webhook and signing secret not sealed with the current key; returns how many accounts changed. */
export async function resealSecrets(store: Store, sealer: Sealer): Promise<number> {
  let changed = 0;
  // The accounts a batch at a time (a table walked in pages: the PostgreSQL store has no
  // whole table in memory), each re-sealed in the transaction that reads it.
  for await (const ids of store.scan('accounts', BATCH)) {
    changed += await store.transact((tx) => {
      let count = 0;
      for (const id of ids) {
        const account = tx.get('accounts', id);
        const next = account && resealed(account, sealer);
        if (!next) continue;
        tx.set('accounts', id, next);
        count++;
      }
      return count;
    });
  }
  return changed;
}

/**
 * Turns every eKYC submission's Aadhaar fingerprint not under the current key into the
 * current key's (identity/duplicates.ts: one number must give one index key); returns how
 * many changed. Runs where secrets are re-sealed: at start and in rotate-key.
 */
export async function refingerprintSubmissions(store: Store, sealer: Sealer): Promise<number> {
  let changed = 0;
  const stale = (fingerprint: string | undefined) =>
    fingerprint !== undefined && !sealer.isCurrentFingerprint(fingerprint);
  for await (const ids of store.scan('kyc_submissions', BATCH)) {
    const any = await store.read(() =>
      ids.some((id) => stale(store.get('kyc_submissions', id)?.aadhaar_fingerprint)),
    );
    if (!any) continue; // a start with nothing to change writes nothing
    changed += await store.transact((tx) => {
      let count = 0;
      for (const id of ids) {
        const submission = tx.get('kyc_submissions', id);
        const fingerprint =
          submission?.aadhaar_fingerprint &&
          sealer.refingerprint(submission.aadhaar_fingerprint, AADHAAR_FINGERPRINT);
        if (!submission || !fingerprint) continue;
        tx.set('kyc_submissions', id, { ...submission, aadhaar_fingerprint: fingerprint });
        count++;
      }
      return count;
    });
  }
  return changed;
}

/** A document's plaintext, checked against the digest recorded at upload. */
export function readDocument(
  data_dir: string,
  document: KycDocument,
  sealer: Sealer,
  stored = readFileSync(join(data_dir, document.path)),
): Buffer {
  const plain = sealer.openBytes(stored, documentAad(document.path));
  if (createHash('sha256').update(plain).digest('hex') !== document.sha256) {
    throw new Error(`eKYC document ${document.path} does not match its recorded SHA-256`);
  }
  return plain;
}

/** Writes bytes durably and privately: temp file 0600, fsync, rename, fsync of the directory. */
export function writePrivateFile(file: string, bytes: Buffer): void {
  const temp = `${file}.tmp`;
  const fd = openSync(temp, 'w', 0o600);
  try {
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
  fsyncDirectory(dirname(file));
}

/**
 * Re-seals every eKYC document not sealed with the current key: `resealed` files changed. With
 * `elsewhere` (the PostgreSQL store, where each gateway keeps the documents it received in its
 * own data dir), a document missing here is counted in `elsewhere` rather than failing: its
 * gateway's rotate-key re-seals it.
 */
export async function resealDocuments(
  store: Store,
  sealer: Sealer,
  data_dir: string,
  options: { elsewhere?: boolean } = {},
): Promise<{ resealed: number; elsewhere: number }> {
  let changed = 0;
  let elsewhere = 0;
  for await (const ids of store.scan('kyc_submissions', BATCH)) {
    const submissions = await store.read(() => ids.map((id) => store.get('kyc_submissions', id)));
    for (const document of submissions.flatMap((submission) => submission?.documents ?? [])) {
      const file = join(data_dir, document.path);
      if (options.elsewhere && !existsSync(file)) {
        elsewhere++;
        continue;
      }
      const stored = readFileSync(file);
      if (sealer.isCurrentBytes(stored)) continue;
      writePrivateFile(
        file,
        sealer.sealBytes(
          readDocument(data_dir, document, sealer, stored),
          documentAad(document.path),
        ),
      );
      changed++;
    }
  }
  return { resealed: changed, elsewhere };
}
