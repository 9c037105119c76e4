// Gemini's Schema (an OpenAPI 3.0 subset: `type` in capitals, `nullable`, `propertyOrdering`)
// as the JSON Schema chat-completions tools and response formats take. Bounded: a schema
// nested deeper than MAX_DEPTH is a 400, as the body reader bounds any JSON.
import { invalid } from '../parse.js';

const MAX_DEPTH = 48;

/** Keywords both dialects spell alike, copied as they are. */
const SAME = [
  'description',
  'title',
  'format',
  'enum',
  'default',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'minProperties',
  'maxProperties',
  'required',
] as const;

export function toJsonSchema(schema: unknown, param: string, depth = 0): Record<string, unknown> {
  if (depth > MAX_DEPTH) throw invalid(`the schema nests deeper than ${MAX_DEPTH} levels`, param);
  if (!schema || typeof schema !== 'object' || Array.isArray(schema))
    throw invalid('a schema must be an object', param);
  const source = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of SAME) if (source[key] !== undefined) out[key] = source[key];
  if (typeof source.type === 'string' && source.type !== 'TYPE_UNSPECIFIED') {
    const type = source.type.toLowerCase();
    out.type = source.nullable === true && type !== 'null' ? [type, 'null'] : type;
  }
  if (source.properties && typeof source.properties === 'object') {
    const properties: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(source.properties as Record<string, unknown>))
      properties[key] = toJsonSchema(value, `${param}.properties.${key}`, depth + 1);
    out.properties = properties;
  }
  if (source.items !== undefined)
    out.items = toJsonSchema(source.items, `${param}.items`, depth + 1);
  if (Array.isArray(source.anyOf))
    out.anyOf = source.anyOf.map((item, index) =>
      toJsonSchema(item, `${param}.anyOf[${index}]`, depth + 1),
    );
  if (source.nullable === true && out.type === undefined && Array.isArray(out.anyOf))
    (out.anyOf as unknown[]).push({ type: 'null' });
  return out;
}
