// Request validation shared by the protocols: a zod failure becomes a 400 naming the field,
// worded as the protocol's own API words it (OpenAI: "invalid value for `messages[0].role`";
// Anthropic: "messages.0.role: Input should be ...", "max_tokens: Field required").
import type { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import { paramOf } from '../schema.js';

export type Wording = 'openai' | 'anthropic';

export function parseBody<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  wording: Wording = 'openai',
): z.output<S> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  if (wording === 'anthropic') {
    const path = issue.path.map(String).join('.');
    throw invalid(path ? `${path}: ${anthropicText(issue)}` : anthropicText(issue), path || null);
  }
  const param = paramOf(issue.path);
  const message =
    issue.code === 'unrecognized_keys'
      ? `unknown field(s) ${issue.keys.join(', ')}`
      : issue.message;
  throw invalid(param ? `invalid value for \`${param}\`: ${message}` : message, param);
}

const PYDANTIC_TYPES: Record<string, string> = {
  array: 'list',
  object: 'dictionary',
  int: 'integer',
  number: 'number',
  string: 'string',
  boolean: 'boolean',
};

/** A zod issue in the words of Anthropic's API (pydantic's). */
function anthropicText(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    if (/received undefined$/.test(issue.message)) return 'Field required';
    return `Input should be a valid ${PYDANTIC_TYPES[issue.expected] ?? issue.expected}`;
  }
  if (issue.code === 'unrecognized_keys')
    return `Extra inputs are not permitted (${issue.keys.join(', ')})`;
  if (issue.code === 'invalid_value' && issue.values.length > 1) {
    const values = issue.values.map((value) => `'${String(value)}'`);
    return `Input should be ${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
  }
  return issue.message;
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
