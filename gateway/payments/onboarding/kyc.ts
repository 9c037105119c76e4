// eKYC: the submission's schema (Aadhaar with Verhoeff, PAN, GSTIN with its mod-36 check),
// document uploads (multipart, size-, count- and type-limited by content, sealed and written
// under the data dir as they arrive, never held whole in memory), and the views. Only the
// last four Aadhaar digits are ever stored.
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import Busboy from 'busboy';
import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, badRequest } from '../../http/errors.js';
import { fsyncDirectory, isNoSpace } from '../../store/fs-durable.js';
import { StoreFullError } from '../../kernel/errors.js';
import { newId } from '../../util/ids.js';
import type { Sealer } from '../../util/sealed.js';
import { documentAad } from '../sealing.js';
import type { PaymentsConfig } from '../config.js';
import { gstStateSchema } from '../tax-config.js';
import type { KycDocument, KycSubmission } from '../engine/tables.js';
import { gstinError } from '../identity/gstin.js';
import { maskAadhaar } from '../identity/aadhaar.js';
import { aadhaarField, panField, personNameField } from '../identity/fields.js';

export const DOCUMENT_FIELDS = [
  'aadhaar_document',
  'pan_document',
  'gst_document',
  'other_document',
] as const;

export const kycBody = z
  .strictObject({
    /** The holder's name as the bank and the PAN hold it (identity/person.ts). */
    name: personNameField,
    aadhaar_number: aadhaarField,
    pan_number: panField,
    gstin: z
      .string()
      .trim()
      .max(15)
      .transform((v) => v.toUpperCase())
      .optional(),
    /** The business address (printed on statements). */
    address: z.string().trim().min(1).max(300).optional(),
    /** The GST state code of the address (01–38): the place of supply of our fees when there is no GSTIN. */
    state: gstStateSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if (body.gstin === undefined || body.gstin === '') return;
    const message = gstinError(body.gstin, body.pan_number);
    if (message) ctx.addIssue({ code: 'custom', path: ['gstin'], message });
    else if (body.state !== undefined && body.state !== body.gstin.slice(0, 2))
      ctx.addIssue({
        code: 'custom',
        path: ['state'],
        message: `must be the GSTIN's state (${body.gstin.slice(0, 2)}) when a GSTIN is given`,
      });
  });
export type KycBody = z.output<typeof kycBody>;

/**
 * A document as it was streamed to disk while the upload arrived: sealed (AES-256-GCM) in
 * `temp` (`kyc-documents/.incoming/<id>.<ext>.part` under the data dir) until the submission
 * is committed, when it is renamed to its `document.path`. Nothing of an upload is ever held
 * whole in memory; what a crash leaves in `.incoming` is removed at the next start
 * (sweepIncoming).
 */
export interface StagedDocument {
  document: KycDocument;
  /** The absolute path of the sealed file until it is moved to its place. */
  temp: string;
}

/** Where an upload's documents go, and with what they are sealed. */
export interface UploadPlace {
  data_dir: string;
  account_id: string;
  sealer: Sealer;
}

/** PDF, PNG or JPEG, decided by the file's first bytes, not by what the client says. */
export function detectDocumentType(
  bytes: Buffer,
): { content_type: string; extension: string } | null {
  if (bytes.subarray(0, 5).toString('latin1') === '%PDF-')
    return { content_type: 'application/pdf', extension: 'pdf' };
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return { content_type: 'image/png', extension: 'png' };
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff)
    return { content_type: 'image/jpeg', extension: 'jpg' };
  return null;
}

/** The bytes detectDocumentType needs before it can decide (the PNG signature). */
const TYPE_BYTES = 8;

/**
 * Reads a multipart/form-data body: text fields and up to `max_files` files of at most
 * `max_file_bytes`, each sealed to disk as it arrives (see StagedDocument). On any failure
 * every file written for it is removed before the promise rejects.
 */
export function readMultipart(
  req: Request,
  limits: PaymentsConfig['kyc'],
  place: UploadPlace,
  tap?: (chunk: Buffer) => void,
): Promise<{ fields: Record<string, string>; files: StagedDocument[] }> {
  return new Promise((resolve, reject) => {
    let busboy: Busboy.Busboy;
    try {
      busboy = openBusboy(req, limits);
    } catch (error) {
      reject(error);
      return;
    }
    // Field names come from the client: no prototype for `__proto__` or `constructor` to reach.
    const fields: Record<string, string> = Object.create(null);
    /** Each file part's staging, in the order the parts came (the documents keep it). */
    const writing: Array<Promise<StagedDocument | null>> = [];
    let failed: ApiError | null = null;
    const fail = (error: ApiError) => {
      if (!failed) failed = error;
    };
    // Once every file part is written (or refused): the first failure, if any, decides.
    const settle = (error?: unknown) =>
      void Promise.all(writing).then((staged) => {
        const files = staged.filter((file): file is StagedDocument => file !== null);
        error ??= failed;
        if (error) {
          discardStaged(files);
          reject(error);
        } else resolve({ fields, files });
      });
    busboy.on('field', (name, value, info) => {
      if (info.valueTruncated)
        fail(badRequest(`${name}: the value is too long`, name, 'invalid_value'));
      else fields[name] = value;
    });
    busboy.on('file', (name, stream, info) => {
      // After a refusal the rest of the body is only read to its end: nothing more is written.
      if (failed) stream.resume();
      else if (!isDocumentField(name)) {
        fail(unknownFileField(name));
        stream.resume();
      } else
        writing.push(
          stageFile(stream, name, info, limits, place).catch((error: ApiError) => {
            fail(error);
            return null;
          }),
        );
    });
    watchLimits(busboy, limits, fail);
    busboy.on('error', (error: Error) => {
      req.unpipe(busboy);
      settle(
        badRequest(
          `the multipart body cannot be read: ${error.message}`,
          null,
          'invalid_multipart',
        ),
      );
    });
    busboy.on('close', () => settle());
    // A client that leaves mid-upload: the part being written fails, and every file goes.
    req.once('close', () => {
      if (!req.complete)
        busboy.destroy(
          new Error('the client closed the connection before the upload was complete'),
        );
    });
    if (tap) req.on('data', tap); // the raw bytes too, for a signed request (attached with the pipe, so both see every chunk)
    req.pipe(busboy);
  });
}

type DocumentField = (typeof DOCUMENT_FIELDS)[number];
const isDocumentField = (name: string): name is DocumentField =>
  (DOCUMENT_FIELDS as readonly string[]).includes(name);
const unknownFileField = (name: string) =>
  badRequest(
    `unknown file field ${name}; use one of ${DOCUMENT_FIELDS.join(', ')}`,
    name,
    'unknown_field',
  );

/** Busboy with this room's limits; a body it cannot even start on is a 400. */
function openBusboy(req: Request, limits: PaymentsConfig['kyc']): Busboy.Busboy {
  try {
    return Busboy({
      headers: req.headers,
      limits: {
        fileSize: limits.max_file_bytes,
        files: limits.max_files,
        fields: 10,
        fieldSize: 1_024,
        parts: limits.max_files + 10,
        headerPairs: 50,
      },
    });
  } catch (error) {
    throw badRequest(
      `the multipart body cannot be read: ${(error as Error).message}`,
      null,
      'invalid_multipart',
    );
  }
}

/**
 * One file part, sealed to disk as it arrives: its first bytes decide its type (415 for
 * anything but PDF, PNG and JPEG, and nothing is written), then every chunk is hashed,
 * encrypted and written with the stream's own back-pressure. A refused file is still read to
 * its end (busboy needs every part consumed) but not written.
 */
async function stageFile(
  stream: Readable,
  field: DocumentField,
  info: Busboy.FileInfo,
  limits: PaymentsConfig['kyc'],
  place: UploadPlace,
): Promise<StagedDocument> {
  let refused: ApiError | null = null;
  let too_large = false;
  stream.on('limit', () => (too_large = true));
  let head: Buffer = Buffer.alloc(0);
  let writer: SealedWriter | null = null;
  const begin = async () => {
    const type = detectDocumentType(head);
    if (!type) {
      refused = new ApiError(
        415,
        'unsupported_document_type',
        `${field}: only PDF, PNG and JPEG documents are accepted`,
        field,
      );
      return;
    }
    writer = await SealedWriter.open(place, newId('doc'), type);
    await writer.write(head);
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (refused || too_large) continue; // read to the end, write nothing more
      if (writer) await (writer as SealedWriter).write(chunk);
      else {
        head = Buffer.concat([head, chunk]);
        if (head.length >= TYPE_BYTES) await begin();
      }
    }
    if (!refused && !too_large && !writer && head.length > 0) await begin();
    if (too_large)
      refused = new ApiError(
        413,
        'document_too_large',
        `${field}: the file is larger than the limit of ${limits.max_file_bytes} bytes`,
        field,
      );
    if (!refused && !writer)
      refused = badRequest(`${field}: the file is empty`, field, 'empty_document');
    if (refused) throw refused;
    return await writer!.finish(field, info.filename ?? 'document');
  } catch (error) {
    await (writer as SealedWriter | null)?.discard();
    throw noRoom(error);
  }
}

/** A document the disk had no room for: 507, nothing submitted (every file of the upload is removed). */
function noRoom(error: unknown): unknown {
  return isNoSpace(error)
    ? new StoreFullError(
        "the gateway's disk is full, so the documents could not be stored; nothing was submitted; retry once space is freed",
      )
    : error;
}

/** A document's sealed file, written as it streams (see Sealer.sealingStream), then fsynced. */
class SealedWriter {
  private constructor(
    readonly id: string,
    readonly type: { content_type: string; extension: string },
    /** Relative to the data dir: where the document lives once submitted. */
    readonly path: string,
    readonly temp: string,
    private readonly file: FileHandle,
    private readonly seal: ReturnType<Sealer['sealingStream']>,
  ) {}

  private readonly hash = createHash('sha256');
  private size = 0;

  static async open(
    place: UploadPlace,
    id: string,
    type: { content_type: string; extension: string },
  ): Promise<SealedWriter> {
    const path = join(KYC_DIR, place.account_id, `${id}.${type.extension}`);
    const incoming = join(place.data_dir, INCOMING);
    mkdirSync(incoming, { recursive: true, mode: 0o700 });
    const temp = join(incoming, `${id}.${type.extension}${PART}`);
    const file = await open(temp, 'wx', 0o600);
    const seal = place.sealer.sealingStream(documentAad(path));
    const writer = new SealedWriter(id, type, path, temp, file, seal);
    try {
      await file.write(seal.head);
    } catch (error) {
      await writer.discard(); // made but not written (a full disk): no stray part file
      throw error;
    }
    return writer;
  }

  async write(plain: Buffer): Promise<void> {
    this.size += plain.length;
    this.hash.update(plain);
    await this.file.write(this.seal.update(plain));
  }

  /** Writes the GCM tag into its place and fsyncs: the document, staged under `temp`. */
  async finish(field: DocumentField, filename: string): Promise<StagedDocument> {
    const { rest, tag } = this.seal.final();
    await this.file.write(rest);
    await this.file.write(tag, 0, tag.length, this.seal.tag_offset);
    await this.file.sync();
    await this.file.close();
    return {
      temp: this.temp,
      document: {
        id: this.id,
        kind: field.replace(/_document$/, ''),
        filename: filename.slice(0, 200),
        content_type: this.type.content_type,
        size_bytes: this.size,
        sha256: this.hash.digest('hex'),
        path: this.path,
      },
    };
  }

  async discard(): Promise<void> {
    await this.file.close().catch(() => {});
    rmSync(this.temp, { force: true });
  }
}

const KYC_DIR = 'kyc-documents';
/** Where documents are written while they are uploaded: one directory, swept at start. */
const INCOMING = join(KYC_DIR, '.incoming');
/** The suffix of a document still being uploaded (or of one whose submission was not committed). */
const PART = '.part';

/**
 * Removes what uploads cut off by a crash or a kill left behind. Called while the gateway
 * starts, before it listens (only the gateway that holds the data dir's lock writes it).
 */
export function sweepIncoming(data_dir: string): void {
  rmSync(join(data_dir, INCOMING), { recursive: true, force: true });
}

/** Busboy's count limits (files, fields, parts), each a clear error rather than a silent cut. */
function watchLimits(
  busboy: Busboy.Busboy,
  limits: PaymentsConfig['kyc'],
  fail: (error: ApiError) => void,
): void {
  busboy.on('filesLimit', () =>
    fail(
      new ApiError(
        413,
        'too_many_documents',
        `at most ${limits.max_files} documents per submission`,
      ),
    ),
  );
  busboy.on('fieldsLimit', () => fail(badRequest('too many form fields', null, 'too_many_fields')));
  busboy.on('partsLimit', () => fail(badRequest('too many form parts', null, 'too_many_fields')));
}

/** Removes staged documents that will not be submitted (a refused or failed request). */
export function discardStaged(files: readonly StagedDocument[]): void {
  for (const file of files) rmSync(file.temp, { force: true });
}

/**
 * Moves staged documents to their places, durably (the renames, then the directory fsynced),
 * before the submission that names them is committed.
 */
export function placeStaged(data_dir: string, files: readonly StagedDocument[]): KycDocument[] {
  const dirs = new Set(files.map((file) => dirname(join(data_dir, file.document.path))));
  try {
    for (const dir of dirs) mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const file of files) renameSync(file.temp, join(data_dir, file.document.path));
    for (const dir of dirs) fsyncDirectory(dir);
    if (dirs.size > 0) fsyncDirectory(join(data_dir, KYC_DIR)); // a new account directory
  } catch (error) {
    // No room for a directory (a full disk): nothing of the upload stays.
    discardStaged(files);
    removeDocuments(
      data_dir,
      files.map((file) => file.document),
    );
    throw noRoom(error);
  }
  return files.map((file) => file.document);
}

export function removeDocuments(data_dir: string, documents: KycDocument[]): void {
  for (const document of documents) rmSync(join(data_dir, document.path), { force: true });
}

export function newSubmission(
  account_id: string,
  body: KycBody,
  kept: { documents: KycDocument[]; aadhaar_fingerprint: string },
  at: string,
  previous: KycSubmission | undefined,
): KycSubmission {
  const { documents, aadhaar_fingerprint } = kept;
  return {
    account_id,
    name: body.name,
    aadhaar_masked: maskAadhaar(body.aadhaar_number),
    aadhaar_fingerprint,
    pan_number: body.pan_number,
    gstin: body.gstin ? body.gstin : null,
    ...(body.address !== undefined ? { address: body.address } : {}),
    ...(body.state !== undefined || body.gstin
      ? { state: body.gstin ? body.gstin.slice(0, 2) : body.state! }
      : {}),
    documents,
    status: 'submitted',
    reason: null,
    submitted_at: at,
    reviewed_at: null,
    submissions: (previous?.submissions ?? 0) + 1,
  };
}
