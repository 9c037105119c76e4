// The built-in engine's JSON-schema instances: a value valid against a schema of the
// documented subset (docs/chat-api.md#structured-outputs-offline), derived deterministically
// from the prompt's words and a seed. Pure functions; no network, no model.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = Record<string, unknown>;

/** Deeper than this (a recursive $ref, an absurd nesting) only what the schema requires is built. */
const MAX_DEPTH = 24;
/** Arrays without minItems get this many items (capped by maxItems). */
const DEFAULT_ITEMS = 2;
const FALLBACK_WORDS = ['offline', 'sample', 'value', 'aihub'];

/** A small deterministic PRNG (mulberry32) seeded from text. */
export class Rng {
  private state: number;
  constructor(seed_text: string) {
    let h = 0x811c9dc5;
    for (let i = 0; i < seed_text.length; i++)
      h = Math.imul(h ^ seed_text.charCodeAt(i), 0x01000193);
    this.state = h >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

/** Content words of a text, for strings that echo the prompt. */
const COMMON_WORDS = new Set([
  'the',
  'and',
  'for',
  'with',
  'what',
  'whats',
  'which',
  'who',
  'how',
  'why',
  'when',
  'where',
  'this',
  'that',
  'these',
  'those',
  'please',
  'give',
  'tell',
  'about',
  'from',
  'into',
  'are',
  'was',
  'were',
  'can',
  'could',
  'would',
  'should',
  'you',
  'your',
  'our',
  'has',
  'have',
  'its',
  'not',
  'but',
  'all',
  'any',
  'some',
  'out',
]);

export function wordsOf(text: string): string[] {
  const words = (text.toLowerCase().match(/[a-z][a-z0-9]{2,}/g) ?? []).filter(
    (w) => !COMMON_WORDS.has(w),
  );
  return words.length ? [...new Set(words)].slice(0, 64) : FALLBACK_WORDS;
}

interface Ctx {
  root: unknown;
  rng: Rng;
  words: string[];
}

/** A value valid against `schema` (within the documented subset), the same for the same prompt and seed. */
export function instanceOf(schema: unknown, prompt: string, seed: string): Json {
  return build(
    schema,
    { root: schema, rng: new Rng(`${seed}\u0000${prompt}`), words: wordsOf(prompt) },
    0,
    null,
  );
}

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function build(schema: unknown, ctx: Ctx, depth: number, key: string | null): Json {
  if (schema === true || schema === undefined) return word(ctx, key);
  if (!isSchema(schema)) return null;
  if (typeof schema.$ref === 'string')
    return build(resolveRef(ctx.root, schema.$ref), ctx, depth + 1, key);
  if (Object.hasOwn(schema, 'const')) return schema.const as Json;
  if (Array.isArray(schema.enum) && schema.enum.length) return ctx.rng.pick(schema.enum) as Json;
  const branches = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (Array.isArray(branches) && branches.length) {
    const usable =
      depth >= MAX_DEPTH
        ? branches.filter((b) => isSchema(b) && (b.type === 'null' || b.type === 'string'))
        : [];
    return build(usable[0] ?? ctx.rng.pick(branches), ctx, depth + 1, key);
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length)
    return build(mergeAll(schema, ctx.root), ctx, depth + 1, key);
  switch (typeOf(schema, depth)) {
    case 'null':
      return null;
    case 'boolean':
      return ctx.rng.next() < 0.5;
    case 'integer':
      return integer(schema, ctx);
    case 'number':
      return number(schema, ctx);
    case 'array':
      return array(schema, ctx, depth);
    case 'object':
      return object(schema, ctx, depth);
    default:
      return string(schema, ctx, key);
  }
}

function typeOf(schema: Schema, depth: number): string {
  const type = schema.type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type) && type.length) {
    // Deep in a recursion, null ends it; otherwise the first real type.
    if (depth >= MAX_DEPTH && type.includes('null')) return 'null';
    return (type.find((t) => t !== 'null') ?? type[0]) as string;
  }
  if (isSchema(schema.properties) || Array.isArray(schema.required)) return 'object';
  if (schema.items !== undefined || Array.isArray(schema.prefixItems)) return 'array';
  if (typeof schema.minimum === 'number' || typeof schema.maximum === 'number') return 'number';
  return 'string';
}

function resolveRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return {};
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const segment = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isSchema(node) || !Object.hasOwn(node, segment)) return {};
    node = node[segment];
  }
  return node;
}

/** allOf of object schemas: properties and required lists merged. */
function mergeAll(schema: Schema, root: unknown): Schema {
  const { allOf, ...rest } = schema;
  const merged: Schema = {
    ...rest,
    properties: { ...(rest.properties as object) },
    required: [...((rest.required as string[]) ?? [])],
  };
  for (let part of allOf as unknown[]) {
    if (isSchema(part) && typeof part.$ref === 'string') part = resolveRef(root, part.$ref);
    if (!isSchema(part)) continue;
    for (const [field, value] of Object.entries(part)) {
      if (field === 'properties') Object.assign(merged.properties as object, value);
      else if (field === 'required') (merged.required as string[]).push(...(value as string[]));
      else if (!Object.hasOwn(merged, field)) merged[field] = value;
    }
  }
  return merged;
}

function object(schema: Schema, ctx: Ctx, depth: number): Json {
  const out: Record<string, Json> = {};
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  // Every listed property is filled (strict structured outputs require all); deep down, only the required ones.
  for (const [name, sub] of Object.entries(properties)) {
    if (depth >= MAX_DEPTH && !required.has(name)) continue;
    out[name] = build(sub, ctx, depth + 1, name);
  }
  const extra = schema.additionalProperties;
  const min = typeof schema.minProperties === 'number' ? schema.minProperties : 0;
  for (const name of required) {
    if (!Object.hasOwn(out, name))
      out[name] = build(isSchema(extra) ? extra : true, ctx, depth + 1, name);
  }
  for (let i = 0; Object.keys(out).length < min && extra !== false && i < 1_000; i++) {
    const name = `${ctx.rng.pick(ctx.words)}_${i}`;
    if (!Object.hasOwn(out, name))
      out[name] = build(isSchema(extra) ? extra : true, ctx, depth + 1, name);
  }
  return out;
}

function array(schema: Schema, ctx: Ctx, depth: number): Json {
  const prefix = Array.isArray(schema.prefixItems) ? (schema.prefixItems as unknown[]) : [];
  const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
  const max = typeof schema.maxItems === 'number' ? schema.maxItems : Infinity;
  const wanted = depth >= MAX_DEPTH ? min : Math.max(min, prefix.length, DEFAULT_ITEMS);
  const count = Math.min(wanted, max, 1_000);
  const items = schema.items === false ? {} : schema.items;
  const out: Json[] = [];
  const seen = new Set<string>();
  for (let i = 0; out.length < count && i < count * 8 + 8; i++) {
    const index = out.length;
    if (schema.items === false && index >= prefix.length) break;
    const value = build(index < prefix.length ? prefix[index] : items, ctx, depth + 1, null);
    if (schema.uniqueItems === true) {
      const text = JSON.stringify(value);
      if (seen.has(text)) continue;
      seen.add(text);
    }
    out.push(value);
  }
  return out;
}

function bounds(schema: Schema): { lo: number; hi: number; lo_open: boolean; hi_open: boolean } {
  const ex_lo = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : null;
  const ex_hi = typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum : null;
  const min = typeof schema.minimum === 'number' ? schema.minimum : null;
  const max = typeof schema.maximum === 'number' ? schema.maximum : null;
  const lo_candidates = [min, ex_lo].filter((v): v is number => v !== null);
  const hi_candidates = [max, ex_hi].filter((v): v is number => v !== null);
  let lo = lo_candidates.length ? Math.max(...lo_candidates) : null;
  let hi = hi_candidates.length ? Math.min(...hi_candidates) : null;
  if (lo === null) lo = hi === null ? 0 : hi - 100;
  if (hi === null) hi = lo + 100;
  return {
    lo,
    hi,
    lo_open: ex_lo !== null && ex_lo === lo,
    hi_open: ex_hi !== null && ex_hi === hi,
  };
}

function integer(schema: Schema, ctx: Ctx): number {
  const { lo, hi, lo_open, hi_open } = bounds(schema);
  const low = lo_open ? Math.floor(lo) + 1 : Math.ceil(lo);
  const high = hi_open ? Math.ceil(hi) - 1 : Math.floor(hi);
  const step =
    typeof schema.multipleOf === 'number' &&
    Number.isInteger(schema.multipleOf) &&
    schema.multipleOf > 0
      ? schema.multipleOf
      : 1;
  const k_lo = Math.ceil(low / step);
  const k_hi = Math.floor(high / step);
  if (k_hi < k_lo) return low;
  return ctx.rng.int(k_lo, Math.min(k_hi, k_lo + 1_000)) * step || 0;
}

function number(schema: Schema, ctx: Ctx): number {
  if (typeof schema.multipleOf === 'number') return integer(schema, ctx);
  const { lo, hi, lo_open, hi_open } = bounds(schema);
  // Two decimals, strictly inside open bounds.
  const low = Math.ceil(lo * 100) / 100 + (lo_open ? 0.01 : 0);
  const high = Math.floor(hi * 100) / 100 - (hi_open ? 0.01 : 0);
  if (high < low) return (lo + hi) / 2;
  return Math.round((low + ctx.rng.next() * (high - low)) * 100) / 100;
}

function hex(ctx: Ctx, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ctx.rng.int(0, 15).toString(16);
  return out;
}

function word(ctx: Ctx, key: string | null): string {
  const picked = ctx.rng.pick(ctx.words);
  return key && ctx.rng.next() < 0.5 ? `${picked} ${key}`.slice(0, 64) : picked;
}

const FORMATS: Record<string, (ctx: Ctx) => string> = {
  'date-time': (ctx) => `${date(ctx)}T${time(ctx)}`,
  date: (ctx) => date(ctx),
  time: (ctx) => time(ctx),
  email: (ctx) => `${ctx.rng.pick(ctx.words)}@example.com`,
  uri: (ctx) => `https://example.com/${ctx.rng.pick(ctx.words)}`,
  url: (ctx) => `https://example.com/${ctx.rng.pick(ctx.words)}`,
  'uri-reference': (ctx) => `/${ctx.rng.pick(ctx.words)}`,
  uuid: (ctx) =>
    `${hex(ctx, 8)}-${hex(ctx, 4)}-4${hex(ctx, 3)}-${ctx.rng.pick(['8', '9', 'a', 'b'])}${hex(ctx, 3)}-${hex(ctx, 12)}`,
  hostname: (ctx) => `${ctx.rng.pick(ctx.words)}.example.com`,
  ipv4: (ctx) => `192.0.2.${ctx.rng.int(1, 254)}`,
  ipv6: (ctx) => `2001:db8::${ctx.rng.int(1, 65_535).toString(16)}`,
  duration: (ctx) => `PT${ctx.rng.int(1, 59)}M`,
};

function date(ctx: Ctx): string {
  return `${ctx.rng.int(2020, 2030)}-${String(ctx.rng.int(1, 12)).padStart(2, '0')}-${String(ctx.rng.int(1, 28)).padStart(2, '0')}`;
}

function time(ctx: Ctx): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(ctx.rng.int(0, 23))}:${two(ctx.rng.int(0, 59))}:${two(ctx.rng.int(0, 59))}Z`;
}

function string(schema: Schema, ctx: Ctx, key: string | null): string {
  const format = typeof schema.format === 'string' ? FORMATS[schema.format] : undefined;
  let text = format ? format(ctx) : word(ctx, key);
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
  // Lengths count code points, as JSON Schema does; prompt words are ASCII.
  while (text.length < min) text += ` ${ctx.rng.pick(ctx.words)}`;
  if (text.length > max) text = text.slice(0, max);
  return text;
}
