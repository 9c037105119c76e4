// GET /openapi.json: an OpenAPI 3.1 document of both APIs and the admin API, generated from
// the same zod schemas that validate the requests, so the document cannot drift from them.
// Each room lists its routes (`RouteDoc[]`) next to its own code.
import { z } from 'zod';
import { errorShapeOf, errorShapeSchemas } from './errors.js';

export type Auth = 'api_key' | 'admin' | 'none';

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Express-style path; `:id` after a slash becomes `{id}` (a colon elsewhere is literal). */
  path: string;
  tag: string;
  summary: string;
  auth: Auth;
  body?: z.ZodType;
  query?: z.ZodType;
  /** The success status and what it returns, in words (the body shapes are in the README). */
  success: { status: number; description: string; content_type?: string };
  /** Extra statuses this route answers with, and when. */
  errors?: Record<number, string>;
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

const ERROR_SCHEMAS = {
  OpenAIError: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'code'],
        properties: {
          message: { type: 'string' },
          type: { type: 'string' },
          param: { type: ['string', 'null'] },
          code: { type: 'string' },
        },
      },
    },
  },
  PaymentsError: {
    type: 'object',
    required: ['status', 'message', 'error'],
    properties: {
      status: { const: false },
      message: { type: 'string' },
      error: {
        type: 'object',
        required: ['code'],
        properties: { code: { type: 'string' }, field: { type: 'string' } },
      },
    },
  },
};

export function buildOpenApi(
  routes: RouteDoc[],
  info: { version: string; server_url: string; currency: string },
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/(?<=\/):([A-Za-z_]+)/g, '{$1}');
    (paths[path] ??= {})[route.method] = operationOf(route, path);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'AIHub gateway',
      version: info.version,
      description: `OpenAI-compatible chat completions (/v1), the recharge, money-transfer and verification platform (/api) and the admin API (/admin), over one account, one wallet and one kind of API key. Amounts are JSON numbers in ${info.currency}.`,
    },
    servers: [{ url: info.server_url }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an AIHub API key (sk-aihub-...)' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        admin: { type: 'http', scheme: 'bearer', description: 'the AIHUB_ADMIN_TOKEN' },
      },
      schemas: { ...ERROR_SCHEMAS, ...errorShapeSchemas() },
    },
    paths,
  };
}

/** One route as an OpenAPI operation: tags, security, parameters, body and responses. */
function operationOf(route: RouteDoc, path: string): Record<string, unknown> {
  const parameters = parametersOf(route);
  const responses = responsesOf(route, path);
  return {
    tags: [route.tag],
    summary: route.summary,
    security:
      route.auth === 'api_key'
        ? [{ bearer: [] }, { apiKey: [] }]
        : route.auth === 'admin'
          ? [{ admin: [] }]
          : [],
    ...(parameters.length ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: jsonSchema(route.body) } },
          },
        }
      : {}),
    responses,
  };
}

/** The path's `:name` segments (a colon after a name is literal: `{model}:method`), then the query schema's fields. */
function parametersOf(route: RouteDoc): unknown[] {
  const parameters: unknown[] = [...route.path.matchAll(/(?<=\/):([A-Za-z_]+)/g)].map((match) => ({
    name: match[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  if (route.query) {
    const schema = jsonSchema(route.query) as {
      properties?: Record<string, unknown>;
      required?: string[];
    };
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      parameters.push({
        name,
        in: 'query',
        required: schema.required?.includes(name) ?? false,
        schema: property,
      });
    }
  }
  return parameters;
}

/** The success response, then the errors every route of its kind can answer, then its own. */
function responsesOf(route: RouteDoc, path: string): Record<string, unknown> {
  const shape = path.startsWith('/api')
    ? 'PaymentsError'
    : (errorShapeOf(path)?.schema ?? 'OpenAIError');
  const error_ref = { $ref: `#/components/schemas/${shape}` };
  const responses: Record<string, unknown> = {
    [route.success.status]: {
      description: route.success.description,
      ...(route.success.status === 204
        ? {}
        : { content: { [route.success.content_type ?? 'application/json']: { schema: {} } } }),
    },
  };
  const errors: Record<number, string> = {};
  if (route.body || route.query) errors[400] = 'invalid input; the error names the field';
  if (route.body) errors[413] = 'body too large';
  if (route.auth === 'api_key') {
    errors[401] = route.path.startsWith('/api/')
      ? 'no key, or an unknown or revoked key; for an account with request signing, a missing, wrong, stale or replayed X-AIHub-Signature'
      : 'no key, or an unknown or revoked key';
  }
  if (route.auth === 'admin') {
    errors[401] = 'no or wrong admin token';
    errors[429] = 'too many wrong admin tokens from this address (Retry-After)';
  }
  Object.assign(errors, route.errors);
  for (const [status, description] of Object.entries(errors)) {
    responses[status] = { description, content: { 'application/json': { schema: error_ref } } };
  }
  return responses;
}
