// The JSON body reader of the Express surfaces (/admin, /api): one place for the limit and
// the accepted media types. Its errors carry body-parser's `type`, which http/errors.ts maps
// to 400, 413 or 415 in the surface's own shape.
import express from 'express';

/** The part of the configuration the reader needs (structural, so the kernel imports no room). */
export interface BodyLimits {
  limits: { body_bytes: number };
}

export function jsonBody(config: BodyLimits) {
  return express.json({ limit: config.limits.body_bytes, strict: true, type: ['application/json', 'application/*+json'] });
}
