// Issue #25, item 8: eKYC uploads were read whole into memory (25 MB each, 20 in parallel)
// before the request was refused as 409 kyc_approved. Now what the head decides is decided
// first (409 for a submission under review or approved, 413 over the bound, 429 past the
// uploads in flight), and documents are sealed to disk as they arrive. Over real HTTP on raw
// connections that send an upload in parts: every wait is on the socket or on the data dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  VALID_KYC,
  download,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  waitFor,
} from '../support/payments-helpers.ts';
import { createFundedAccount, type Gateway } from './helpers.ts';

const BOUNDARY = 'aihub-test-boundary';
const MB = 1024 * 1024;

/** The multipart body of an eKYC submission with one PDF document of `size` bytes (marked). */
function kycUpload(size: number): { head: Buffer; document: Buffer; tail: Buffer } {
  let fields = '';
  for (const [name, value] of Object.entries(VALID_KYC))
    fields += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const document = Buffer.alloc(size, 'PLAINTEXT-MARKER ');
  Buffer.from('%PDF-1.4\n').copy(document);
  return {
    head: Buffer.from(
      `${fields}--${BOUNDARY}\r\nContent-Disposition: form-data; name="pan_document"; filename="pan.pdf"\r\n` +
        'Content-Type: application/pdf\r\n\r\n',
    ),
    document,
    tail: Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  };
}

/** Opens a raw connection and sends the request head of an upload of `length` bytes. */
async function startUpload(gw: Gateway, key: string, length: number) {
  const socket = connect(gw.port, '127.0.0.1');
  await once(socket, 'connect');
  socket.on('error', () => {});
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.write(
    `POST /api/kyc HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: ${key}\r\nConnection: close\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${length}\r\n\r\n`,
  );
  const answer = async () => {
    await waitFor(
      () => Buffer.concat(received).includes('\r\n\r\n'),
      () => `no answer yet: ${Buffer.concat(received).toString('latin1').slice(0, 100)}`,
      20_000,
    );
    const text = Buffer.concat(received).toString('utf8');
    return { status: Number(text.split(' ')[1]), text };
  };
  return { socket, answer };
}

/** Every file in a directory under the eKYC documents (an account's, or `.incoming`), with its size. */
function filesIn(gw: Gateway, sub: string): Array<{ name: string; size: number; path: string }> {
  const dir = join(gw.data_dir, 'kyc-documents', sub);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).map((name) => ({
    name,
    path: join(dir, name),
    size: statSync(join(dir, name)).size,
  }));
}
const documentFiles = (gw: Gateway, account_id: string) => filesIn(gw, account_id);
/** The uploads being written (sealed .part files, one directory for every account). */
const incomingFiles = (gw: Gateway) => filesIn(gw, '.incoming');

const config = () => paymentsConfig({ kyc: { max_file_bytes: 20 * MB, max_files: 2 } });

test("item 8: an approved account's upload is refused (409) from its head, before its body is read", async () => {
  const gw = await startPaymentsGateway(config());
  const sockets: Socket[] = [];
  try {
    const { key } = await onboard(gw, 10); // eKYC approved
    const { head, document, tail } = kycUpload(20 * MB);
    const upload = await startUpload(gw, key, head.length + document.length + tail.length);
    sockets.push(upload.socket);
    upload.socket.write(head);
    upload.socket.write(document.subarray(0, 64 * 1024)); // a 64 KiB part of 20 MiB: the rest never comes
    const { status, text } = await upload.answer();
    assert.equal(status, 409, text.slice(0, 300));
    assert.match(text, /kyc_approved/);
  } finally {
    for (const socket of sockets) socket.destroy();
    await gw.stop();
  }
});

test('item 8: an upload is sealed to disk as it arrives (never whole in memory), one per account at a time; a cut one leaves nothing', async () => {
  const gw = await startPaymentsGateway(config());
  const sockets: Socket[] = [];
  try {
    const { key, account_id } = await createFundedAccount(gw, 0);
    const { head, document, tail } = kycUpload(8 * MB);
    const length = head.length + document.length + tail.length;
    const first = await startUpload(gw, key, length);
    sockets.push(first.socket);
    first.socket.write(head);
    first.socket.write(document.subarray(0, 4 * MB));
    // Half of the document is on disk before the rest is sent: a sealed .part file.
    await waitFor(
      () => incomingFiles(gw).some((f) => f.name.endsWith('.part') && f.size >= 4 * MB),
      () => JSON.stringify(incomingFiles(gw)),
    );
    assert.deepEqual(documentFiles(gw, account_id), [], 'nothing in its place before the commit');
    const [part] = incomingFiles(gw);
    const sealed = readFileSync(part!.path);
    assert.equal(sealed.subarray(0, 10).toString('latin1'), 'AIHUB-ENC1');
    assert.ok(!sealed.includes('PLAINTEXT-MARKER'), 'sealed, not the plaintext');

    // A second upload of the same account while the first is in flight: 429 at once.
    const second = await startUpload(gw, key, length);
    sockets.push(second.socket);
    const refused = await second.answer();
    assert.equal(refused.status, 429, refused.text.slice(0, 300));
    assert.match(refused.text, /too_many_uploads/);

    // The first finishes: submitted, its document in place, readable as sent.
    first.socket.write(document.subarray(4 * MB));
    first.socket.write(tail);
    const done = await first.answer();
    assert.equal(done.status, 200, done.text.slice(0, 300));
    const files = documentFiles(gw, account_id);
    assert.equal(files.length, 1);
    assert.deepEqual(incomingFiles(gw), []);
    assert.ok(files[0]!.name.endsWith('.pdf'), files[0]!.name);
    const body = JSON.parse(done.text.slice(done.text.indexOf('\r\n\r\n') + 4)) as any;
    assert.ok(body.data.documents[0].size_bytes === document.length);
    assert.ok(
      (await download(gw, account_id, body.data.documents[0].id)).equals(document),
      'the admin downloads the bytes sent',
    );

    // Another account's upload cut off half-way: its partial file is removed.
    const other = await createFundedAccount(gw, 0);
    const cut = await startUpload(gw, other.key, length);
    cut.socket.write(head);
    cut.socket.write(document.subarray(0, 2 * MB));
    await waitFor(
      () => incomingFiles(gw).some((f) => f.size >= 2 * MB),
      () => JSON.stringify(incomingFiles(gw)),
    );
    cut.socket.destroy();
    await waitFor(
      () => incomingFiles(gw).length === 0,
      () => JSON.stringify(incomingFiles(gw)),
    );
    assert.deepEqual(documentFiles(gw, other.account_id), []);
    // …and its place in flight is free again: the account uploads at once.
    const small = kycUpload(64 * 1024);
    const again = await startUpload(
      gw,
      other.key,
      small.head.length + small.document.length + small.tail.length,
    );
    sockets.push(again.socket);
    again.socket.write(Buffer.concat([small.head, small.document, small.tail]));
    assert.equal((await again.answer()).status, 200);
  } finally {
    for (const socket of sockets) socket.destroy();
    await gw.stop();
  }
});

test('item 8: an upload cut off by a kill leaves its sealed part, and the next start removes it', async () => {
  const gw = await startPaymentsGateway(config());
  const sockets: Socket[] = [];
  let again: Gateway | null = null;
  try {
    const { key } = await createFundedAccount(gw, 0);
    const { head, document, tail } = kycUpload(4 * MB);
    const upload = await startUpload(gw, key, head.length + document.length + tail.length);
    sockets.push(upload.socket);
    upload.socket.write(head);
    upload.socket.write(document.subarray(0, 2 * MB));
    await waitFor(
      () => incomingFiles(gw).some((f) => f.size >= 2 * MB),
      () => JSON.stringify(incomingFiles(gw)),
    );
    await gw.stop('SIGKILL');
    assert.equal(incomingFiles(gw).length, 1, 'the kill left the part');
    again = await startPaymentsGateway(config(), {
      data_dir: gw.data_dir,
      admin_token: gw.admin_token,
    });
    assert.deepEqual(incomingFiles(gw), [], 'the start swept it');
  } finally {
    for (const socket of sockets) socket.destroy();
    if (gw.proc.exitCode === null && gw.proc.signalCode === null) await gw.stop('SIGKILL');
    await again?.stop();
  }
});

test('item 8: the gateway reads at most max_uploads eKYC uploads at once, whoever sends them; a place freed is taken at once', async () => {
  const gw = await startPaymentsGateway(
    paymentsConfig({ kyc: { max_file_bytes: 20 * MB, max_files: 2, max_uploads: 2 } }),
  );
  const sockets: Socket[] = [];
  try {
    const accounts = [];
    for (let i = 0; i < 3; i++) accounts.push(await createFundedAccount(gw, 0));
    const { head, document, tail } = kycUpload(2 * MB);
    const length = head.length + document.length + tail.length;
    // Two accounts' uploads in flight: each has begun writing its sealed part.
    const uploads = [];
    for (const [i, account] of accounts.slice(0, 2).entries()) {
      const upload = await startUpload(gw, account.key, length);
      sockets.push(upload.socket);
      upload.socket.write(head);
      upload.socket.write(document.subarray(0, MB));
      await waitFor(
        () => incomingFiles(gw).filter((f) => f.size >= MB).length === i + 1,
        () => JSON.stringify(incomingFiles(gw)),
      );
      uploads.push(upload);
    }
    // A third account, under its own bound of one: refused for the gateway's, from its head.
    const third = await startUpload(gw, accounts[2]!.key, length);
    sockets.push(third.socket);
    const refused = await third.answer();
    assert.equal(refused.status, 429, refused.text.slice(0, 300));
    assert.match(refused.text, /too_many_uploads/);
    assert.match(refused.text, /the gateway is reading as many eKYC uploads/);
    assert.match(refused.text, /retry-after: 1/i);
    // The first finishes; the third account's retry is read and submitted.
    uploads[0]!.socket.write(document.subarray(MB));
    uploads[0]!.socket.write(tail);
    assert.equal((await uploads[0]!.answer()).status, 200);
    const retry = await startUpload(gw, accounts[2]!.key, length);
    sockets.push(retry.socket);
    retry.socket.write(Buffer.concat([head, document, tail]));
    const done = await retry.answer();
    assert.equal(done.status, 200, done.text.slice(0, 300));
    assert.equal(documentFiles(gw, accounts[2]!.account_id).length, 1);
  } finally {
    for (const socket of sockets) socket.destroy();
    await gw.stop();
  }
});
