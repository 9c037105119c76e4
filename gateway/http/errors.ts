// One error module for every surface. `/v1` and `/admin` answer in OpenAI's shape
// {error:{message,type,param,code}}; `/api` in the payments shape {status:false,message,error:{code,field}}.
import type { NextFunction, Request, Response } from 'express';
import { z } from 'zod';
import { ServiceError, StoreUnavailableError, type ServiceErrorKind } from '../kernel/errors.js';
import { requestScope, type RequestScope } from '../kernel/request-scope.js';

export class ApiError extends Error {
  /**
   * The gateway's own fields for the client (the 402's top-up remedy): `x_aihub` beside the
   * error in the AI protocols' bodies, where their clients tolerate an extra field.
   */
  x_aihub: Record<string, unknown> | undefined;
  /** A link that helps the caller act (the 402's top-up page), for a shape that carries one. */
  help: { description: string; url: string } | undefined;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly type: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (
  message: string,
  param: string | null = null,
  code = 'invalid_request',
) => new ApiError(400, code, message, param, 'invalid_request_error');
export const notFound = (message: string, code = 'not_found') =>
  new ApiError(404, code, message, null, 'invalid_request_error');
export const conflict = (message: string, code = 'conflict', param: string | null = null) =>
  new ApiError(409, code, message, param, 'invalid_request_error');

const KIND_STATUS: Record<ServiceErrorKind, number> = {
  invalid: 400,
  insufficient_balance: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  unavailable: 503,
  insufficient_storage: 507,
};

/** A service's error as the JSON APIs answer it; other errors are returned as they are. */
export function fromService(error: unknown): unknown {
  if (!(error instanceof ServiceError)) return error;
  return new ApiError(
    KIND_STATUS[error.kind],
    error.code,
    error.message,
    error.field,
    null,
    error.headers,
  );
}

function defaultType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 402) return 'insufficient_balance';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_exceeded';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** The dotted path of the first zod issue, e.g. `messages.0.role`. */
export function zodParam(error: z.ZodError): string | null {
  const path = error.issues[0]?.path ?? [];
  return path.length ? path.map(String).join('.') : null;
}

export function fromZod(error: z.ZodError): ApiError {
  const issue = error.issues[0];
  const param = zodParam(error);
  let message = issue?.message ?? 'invalid request';
  if (issue?.code === 'unrecognized_keys') {
    const keys = (issue as { keys: string[] }).keys;
    return badRequest(
      `unknown field${keys.length > 1 ? 's' : ''}: ${keys.join(', ')}`,
      keys[0] ?? param,
      'unknown_field',
    );
  }
  if (param) message = `${param}: ${message}`;
  // A rule may name its own code (identity/fields.ts: invalid_pan, invalid_ifsc...).
  const code = (issue as { params?: { code?: unknown } } | undefined)?.params?.code;
  return badRequest(message, param, typeof code === 'string' ? code : 'invalid_value');
}

/** Parses with a zod schema or throws a 400 ApiError naming the field. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw fromZod(result.error);
  return result.data;
}

export function isPaymentsPath(path: string): boolean {
  return path === '/api' || path.startsWith('/api/');
}

/**
 * An API's own error shape, on the paths whose clients read it (Anthropic's on /v1/messages):
 * given by the room that serves those paths (chat/routes.ts adds its protocols'), so that every error on them, wherever it is answered (the lean lane,
 * a connection refused before its body), leaves in that shape.
 */
export interface ErrorShape {
  /** Whether a path's clients read errors in this shape. */
  matches(path: string): boolean;
  /** The error in this shape (`x_aihub`, when the error has one, is put beside it). */
  body(error: ApiError): Record<string, unknown>;
  /** The name of its schema among the OpenAPI document's components. */
  readonly schema: string;
  /** That schema (JSON Schema), for the document. */
  readonly json_schema: Record<string, unknown>;
}

const SHAPES = new Map<string, ErrorShape>();

/** Answers errors on `shape`'s paths in its shape; a second call under the same name replaces the first. */
export function addErrorShape(name: string, shape: ErrorShape): void {
  SHAPES.set(name, shape);
}

/** The API error shape a path's clients read, if one was added for it (else OpenAI's or the payments'). */
export function errorShapeOf(path: string): ErrorShape | null {
  for (const shape of SHAPES.values()) if (shape.matches(path)) return shape;
  return null;
}

/** The added shapes' schemas by name, for the OpenAPI document's components. */
export function errorShapeSchemas(): Record<string, Record<string, unknown>> {
  return Object.fromEntries([...SHAPES.values()].map((shape) => [shape.schema, shape.json_schema]));
}

export function errorBody(path: string, error: ApiError): unknown {
  const extra = error.x_aihub ? { x_aihub: error.x_aihub } : {};
  const shape = errorShapeOf(path);
  if (shape) return { ...shape.body(error), ...extra };
  if (isPaymentsPath(path)) {
    return {
      status: false,
      message: error.message,
      error: { code: error.code, ...(error.param ? { field: error.param } : {}) },
    };
  }
  return {
    error: {
      message: error.message,
      type: error.type ?? defaultType(error.status),
      param: error.param,
      code: error.code,
    },
    ...extra,
  };
}

export function sendError(req: Request, res: Response, error: ApiError): void {
  // For the request log line (a 4xx's code and param).
  res.locals.refusal = { code: error.code, param: error.param };
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json(errorBody(req.path, error));
}

/**
 * A compressed body (`Content-Encoding: gzip`, `deflate`, `br`) that does not decompress:
 * body-parser passes zlib's own error on (`Z_DATA_ERROR`, `Z_BUF_ERROR` for a cut stream,
 * `ERR__ERROR_FORMAT_*` from brotli), with a status but no `type`.
 */
function isDecompressionError(error: object): boolean {
  const { errno, code } = error as { errno?: unknown; code?: unknown };
  return (
    typeof errno === 'number' &&
    typeof code === 'string' &&
    (/^Z_[A-Z_]+$/.test(code) || /^ERR_(_ERROR_|BROTLI)/.test(code))
  );
}

/** Errors thrown by body-parser carry a `type`; map them to clear 4xx answers. */
function fromBodyParser(error: {
  type?: string;
  status?: number;
  limit?: number;
}): ApiError | null {
  switch (error.type) {
    case 'entity.parse.failed':
      return badRequest('the request body is not valid JSON', null, 'invalid_json');
    case 'entity.too.large':
      return new ApiError(
        413,
        'request_too_large',
        `the request body is larger than the limit of ${error.limit} bytes`,
      );
    case 'parameters.too.many':
      return new ApiError(413, 'too_many_parameters', 'the form has more fields than allowed');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError(
        415,
        'unsupported_encoding',
        'the request body encoding is not supported',
      );
    case 'request.aborted':
      return badRequest('the request was aborted by the client', null, 'request_aborted');
    default:
      return null;
  }
}

/**
 * The store refused a request (its database down, a connection lost): 503 with Retry-After,
 * in every surface's shape, and a text that says only what the gateway knows: "nothing was
 * changed" when that is known; else that the request was not completed; and, for a commit
 * whose outcome could not be learnt, `store_outcome_unknown`. `request`: the answering
 * request's scope (the lean lane passes its own; the Express lane's is implicit).
 */
export function storeUnavailable(
  error: StoreUnavailableError,
  request: RequestScope | undefined = requestScope(),
): ApiError {
  const headers = { 'retry-after': String(error.retry_after_s) };
  if (error.code === 'store_outcome_unknown')
    return new ApiError(
      503,
      'store_outcome_unknown',
      "the outcome is unknown: the connection to the database was lost while this request was being committed, and the gateway could not find out in time whether it was applied. A retry with the same idempotency key (the Idempotency-Key header; the admin API's reference) is safe: it is applied at most once. A chat request has no such key: whether it was billed shows in the usage records under its request id",
      null,
      'api_error',
      headers,
    );
  if (error.nothingChanged(request))
    return new ApiError(
      503,
      'store_unavailable',
      'the store is unavailable for a moment; nothing was changed, retry shortly',
      null,
      'api_error',
      headers,
    );
  return new ApiError(
    503,
    'store_unavailable',
    'the store is unavailable for a moment and this request was not completed; what it did before stands (a payment stays pending until its outcome is known): retry shortly with the same idempotency key',
    null,
    'api_error',
    headers,
  );
}

/** The ApiError a known error stands for (ours, zod's, body-parser's), or null for an unexpected one. */
export function knownError(thrown: unknown): ApiError | null {
  if (thrown instanceof StoreUnavailableError) return storeUnavailable(thrown);
  const error = fromService(thrown);
  if (error instanceof ApiError) return error;
  if (error instanceof z.ZodError) return fromZod(error);
  if (error && typeof error === 'object' && isDecompressionError(error))
    return badRequest(
      'the request body does not decompress as its Content-Encoding says (gzip, deflate or br); send it compressed whole, or uncompressed',
      null,
      'invalid_content_encoding',
    );
  if (error && typeof error === 'object' && 'type' in error)
    return fromBodyParser(error as { type?: string });
  return null;
}

/** The last middleware: every error leaves in its surface's shape; unknown errors are 500s and are logged. */
export function errorHandler(onUnexpected: (error: unknown, req: Request) => void) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    let api = knownError(error);
    if (!api) {
      onUnexpected(error, req);
      api = new ApiError(
        500,
        'internal_error',
        'internal error; the request id identifies it in the gateway log',
        null,
        'api_error',
      );
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    sendError(req, res, api);
  };
}
