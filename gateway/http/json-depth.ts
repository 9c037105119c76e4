// The nesting bound of every JSON body the gateway accepts, checked on the raw bytes before
// they are parsed. JSON.parse takes any depth, but everything after it that walks a value
// recursively does not: JSON.stringify (audit records, token counts of `tools`), zod,
// structured logging. About 6,000 levels made an admin call's audit listener throw a
// RangeError outside any try, which ended the process (issue #13, finding 2).
import { ApiError } from './errors.js';

/** Deeper than any real request: OpenAI tool schemas and payment bodies nest a few levels. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether JSON text nests objects and arrays deeper than `limit`. One pass over the bytes,
 * stopping at the first level past the limit; brackets inside strings do not count (a quote
 * or backslash byte never occurs inside a multi-byte UTF-8 character, so bytes are enough).
 * Text that is not valid JSON is left to the parser to refuse.
 */
export function jsonDepthExceeds(bytes: Uint8Array, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let in_string = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (in_string) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) in_string = false;
    } else if (byte === QUOTE) {
      in_string = true;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** Throws the 400 every surface answers (in its own shape) for a body nested past the bound. */
export function assertJsonDepth(bytes: Uint8Array, limit = MAX_JSON_DEPTH): void {
  if (jsonDepthExceeds(bytes, limit)) {
    throw new ApiError(
      400,
      'json_too_deep',
      `the request body nests objects and arrays deeper than ${limit} levels`,
      null,
      'invalid_request_error',
    );
  }
}
