// Request validation shared by the protocols: a zod failure becomes a 400 naming the field,
// worded as the protocol's own API words it (OpenAI's "invalid value for `messages[0].role`"
// here; a protocol with other words passes its own Wording from its folder).
import type { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import { paramOf } from '../schema.js';

/** How a protocol's API words a zod failure (messages/wording.ts has Anthropic's). */
export type Wording = (issue: z.core.$ZodIssue) => ApiError;

/** OpenAI's wording: "invalid value for `messages[0].role`: ...", naming the field as `param`. */
export const openaiWording: Wording = (issue) => {
  const param = paramOf(issue.path);
  const message =
    issue.code === 'unrecognized_keys'
      ? `unknown field(s) ${issue.keys.join(', ')}`
      : issue.message;
  return invalid(param ? `invalid value for \`${param}\`: ${message}` : message, param);
};

export function parseBody<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  wording: Wording = openaiWording,
): z.output<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  throw wording(result.error.issues[0]!);
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
