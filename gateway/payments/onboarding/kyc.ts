// eKYC: the submission's schema (Aadhaar with Verhoeff, PAN, GSTIN with its mod-36 check),
// document uploads (multipart, size-, count- and type-limited by content, stored under the
// data dir), and the views. Only the last four Aadhaar digits are ever stored.
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import Busboy from 'busboy';
import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, badRequest } from '../../http/errors.js';
import { fsyncDirectory } from '../../store/journal.js';
import { newId } from '../../util/ids.js';
import type { Sealer } from '../../util/sealed.js';
import { documentAad } from '../sealing.js';
import type { PaymentsConfig } from '../config.js';
import { gstStateSchema } from '../tax-config.js';
import type { KycDocument, KycSubmission } from '../engine/tables.js';
import {
  aadhaarError,
  gstinError,
  maskAadhaar,
  normalizeAadhaar,
  panError,
} from '../validators.js';

export const DOCUMENT_FIELDS = [
  'aadhaar_document',
  'pan_document',
  'gst_document',
  'other_document',
] as const;

const check =
  (error: (value: string) => string | null) => (value: string, ctx: z.RefinementCtx) => {
    const message = error(value);
    if (message) ctx.addIssue({ code: 'custom', message });
  };

export const kycBody = z
  .strictObject({
    name: z.string().trim().min(2, 'must be at least 2 characters').max(200),
    aadhaar_number: z.string().max(20).transform(normalizeAadhaar).superRefine(check(aadhaarError)),
    pan_number: z
      .string()
      .trim()
      .max(10)
      .transform((v) => v.toUpperCase())
      .superRefine(check(panError)),
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

export interface UploadedFile {
  field: (typeof DOCUMENT_FIELDS)[number];
  filename: string;
  bytes: Buffer;
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

/** Reads a multipart/form-data body: text fields and up to `max_files` files of at most `max_file_bytes`. */
export function readMultipart(
  req: Request,
  limits: PaymentsConfig['kyc'],
  tap?: (chunk: Buffer) => void,
): Promise<{ fields: Record<string, string>; files: UploadedFile[] }> {
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
    const files: UploadedFile[] = [];
    let failed: ApiError | null = null;
    const fail = (error: ApiError) => {
      if (!failed) failed = error;
    };
    busboy.on('field', (name, value, info) => {
      if (info.valueTruncated)
        fail(badRequest(`${name}: the value is too long`, name, 'invalid_value'));
      else fields[name] = value;
    });
    busboy.on('file', collectFile(limits, files, fail));
    watchLimits(busboy, limits, fail);
    busboy.on('error', (error: Error) => {
      req.unpipe(busboy);
      reject(
        badRequest(
          `the multipart body cannot be read: ${error.message}`,
          null,
          'invalid_multipart',
        ),
      );
    });
    busboy.on('close', () => {
      if (failed) reject(failed);
      else resolve({ fields, files });
    });
    if (tap) req.on('data', tap); // the raw bytes too, for a signed request (attached with the pipe, so both see every chunk)
    req.pipe(busboy);
  });
}

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

/** Busboy's 'file' handler: a known document field is collected whole, any other is drained. */
function collectFile(
  limits: PaymentsConfig['kyc'],
  files: UploadedFile[],
  fail: (error: ApiError) => void,
): (name: string, stream: Readable, info: Busboy.FileInfo) => void {
  return (name, stream, info) => {
    const chunks: Buffer[] = [];
    if (!(DOCUMENT_FIELDS as readonly string[]).includes(name)) {
      fail(
        badRequest(
          `unknown file field ${name}; use one of ${DOCUMENT_FIELDS.join(', ')}`,
          name,
          'unknown_field',
        ),
      );
      stream.resume();
      return;
    }
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('limit', () =>
      fail(
        new ApiError(
          413,
          'document_too_large',
          `${name}: the file is larger than the limit of ${limits.max_file_bytes} bytes`,
          name,
        ),
      ),
    );
    stream.on('close', () => {
      files.push({
        field: name as UploadedFile['field'],
        filename: (info.filename ?? 'document').slice(0, 200),
        bytes: Buffer.concat(chunks),
      });
    });
  };
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

export function checkDocuments(
  files: UploadedFile[],
): Array<UploadedFile & { content_type: string; extension: string }> {
  return files.map((file) => {
    if (file.bytes.length === 0)
      throw badRequest(`${file.field}: the file is empty`, file.field, 'empty_document');
    const type = detectDocumentType(file.bytes);
    if (!type)
      throw new ApiError(
        415,
        'unsupported_document_type',
        `${file.field}: only PDF, PNG and JPEG documents are accepted`,
        file.field,
      );
    return { ...file, ...type };
  });
}

/** Writes documents sealed (AES-256-GCM) and durably (fsync file and directory), readable by the gateway user only. */
export function storeDocuments(
  data_dir: string,
  account_id: string,
  files: ReturnType<typeof checkDocuments>,
  sealer: Sealer,
): KycDocument[] {
  if (files.length === 0) return [];
  const relative_dir = join('kyc-documents', account_id);
  const dir = join(data_dir, relative_dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const documents: KycDocument[] = [];
  try {
    for (const file of files) {
      const id = newId('doc');
      const path = join(relative_dir, `${id}.${file.extension}`);
      const fd = openSync(join(data_dir, path), 'wx', 0o600);
      try {
        const sealed = sealer.sealBytes(file.bytes, documentAad(path));
        for (let at = 0; at < sealed.length;) at += writeSync(fd, sealed, at, sealed.length - at);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      documents.push({
        id,
        kind: file.field.replace(/_document$/, ''),
        filename: file.filename,
        content_type: file.content_type,
        size_bytes: file.bytes.length,
        sha256: createHash('sha256').update(file.bytes).digest('hex'),
        path,
      });
    }
    fsyncDirectory(dir);
  } catch (error) {
    removeDocuments(data_dir, documents);
    throw error;
  }
  return documents;
}

export function removeDocuments(data_dir: string, documents: KycDocument[]): void {
  for (const document of documents) rmSync(join(data_dir, document.path), { force: true });
}

export function newSubmission(
  account_id: string,
  body: KycBody,
  documents: KycDocument[],
  at: string,
  previous: KycSubmission | undefined,
): KycSubmission {
  return {
    account_id,
    name: body.name,
    aadhaar_masked: maskAadhaar(body.aadhaar_number),
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

export function submissionView(submission: KycSubmission) {
  return {
    account_id: submission.account_id,
    status: submission.status,
    ...(submission.reason ? { reason: submission.reason } : {}),
    name: submission.name,
    aadhaar_number: submission.aadhaar_masked,
    pan_number: submission.pan_number,
    gstin: submission.gstin,
    address: submission.address ?? null,
    state: submission.state ?? null,
    documents: submission.documents.map((d) => ({
      id: d.id,
      kind: d.kind,
      filename: d.filename,
      content_type: d.content_type,
      size_bytes: d.size_bytes,
      sha256: d.sha256,
    })),
    submitted_at: submission.submitted_at,
    reviewed_at: submission.reviewed_at,
    submissions: submission.submissions,
  };
}
