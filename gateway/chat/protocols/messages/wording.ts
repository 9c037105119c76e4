// Anthropic's API words a validation failure as pydantic does: "messages.0.role: Input should
// be 'user' or 'assistant'", "max_tokens: Field required"; Claude's clients show it as is.
import type { z } from 'zod';
import { invalid, type Wording } from '../parse.js';

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

/** "path: text", the path dotted (`messages.0.role`) and named as the error's param. */
export const anthropicWording: Wording = (issue) => {
  const path = issue.path.map(String).join('.');
  return invalid(path ? `${path}: ${anthropicText(issue)}` : anthropicText(issue), path || null);
};
