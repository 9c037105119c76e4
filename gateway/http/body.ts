// The JSON body reader of the Express surfaces (/admin, /api): one place for the limit, the
// accepted media types, the nesting bound (checked before parsing) and the raw body that a
// signed /api request is verified against. Its errors carry body-parser's `type`, which
// errors.ts maps to 400, 413 or 415 in the surface's own shape.
import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import { ApiError } from './errors.js';
import { assertJsonDepth } from './json-depth.js';
import { keepRawBody } from './raw-body.js';

/** The part of the configuration the reader needs (structural, so that http/ imports no room). */
export interface BodyLimits {
  limits: { body_bytes: number };
}

/** The JSON body of every Express route: size-limited, and nested at most MAX_JSON_DEPTH levels (checked before parsing). */
export function jsonBody(config: BodyLimits) {
  return express.json({
    limit: config.limits.body_bytes,
    strict: true,
    type: ['application/json', 'application/*+json'],
    verify: verifyJsonBody,
  });
}

/** body-parser's `verify` hook: keeps the raw body (signed /api requests) and bounds its nesting. */
function verifyJsonBody(
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  encoding: string,
): void {
  keepRawBody(req, res, body);
  if (!encoding || /^utf-?8$/i.test(encoding)) return assertJsonDepth(body);
  let text: string;
  try {
    text = new TextDecoder(encoding, { fatal: true }).decode(body);
  } catch {
    throw new ApiError(
      415,
      'unsupported_encoding',
      `the ${encoding.slice(0, 40)} charset is not supported for JSON; send UTF-8`,
    );
  }
  assertJsonDepth(Buffer.from(text));
}
