// Request validation shared by the protocols: a zod failure becomes a 400 naming the field.
import type { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import { paramOf } from '../schema.js';

export function parseBody<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = paramOf(issue.path);
  const message =
    issue.code === 'unrecognized_keys'
      ? `unknown field(s) ${issue.keys.join(', ')}`
      : issue.message;
  throw invalid(param ? `invalid value for \`${param}\`: ${message}` : message, param);
}

export function invalid(message: string, param: string | null = null): ApiError {
  return new ApiError(400, 'invalid_value', message, param, 'invalid_request_error');
}

/** Parses a tool call's JSON arguments into an object, `{}` when they are not one. */
export function argumentsObject(text: string | undefined): Record<string, unknown> {
  if (!text) return {};
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}
