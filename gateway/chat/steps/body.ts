// Step 3: the request body, read whole up to the room's limit (never more is buffered) and
// parsed as JSON within the nesting bound; the protocol validates it after.
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../../http/errors.js';
import { assertJsonDepth } from '../../http/json-depth.js';

/** Reads a JSON body up to `limit_bytes` without buffering more than that. */
export function readJson(req: IncomingMessage, limit_bytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit_bytes) return Promise.reject(tooLarge(limit_bytes));
  const encoding = req.headers['content-encoding'];
  if (encoding && encoding !== 'identity') {
    return Promise.reject(
      new ApiError(
        415,
        'unsupported_encoding',
        `content-encoding ${encoding.slice(0, 40)} is not supported; send the body uncompressed`,
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit_bytes) {
        cleanup();
        req.resume();
        reject(tooLarge(limit_bytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      try {
        assertJsonDepth(bytes);
        resolve(parseJsonBody(bytes.toString('utf8')));
      } catch (error) {
        reject(error);
      }
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

function parseJsonBody(text: string): unknown {
  if (!text.trim())
    throw new ApiError(
      400,
      'invalid_json',
      'the request body is empty; send the chat completion request as JSON',
      null,
      'invalid_request_error',
    );
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(
      400,
      'invalid_json',
      'the request body is not valid JSON',
      null,
      'invalid_request_error',
    );
  }
}

function tooLarge(limit_bytes: number): ApiError {
  return new ApiError(
    413,
    'request_too_large',
    `the request body is larger than the limit of ${limit_bytes} bytes`,
    null,
    'invalid_request_error',
    { connection: 'close' },
  );
}
