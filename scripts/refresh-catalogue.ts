// Refreshes the model catalogue (gateway/catalogue/litellm-prices.json) from LiteLLM's
// model_prices_and_context_window.json (MIT): from its URL (the default) or a local copy.
// Keeps only what the offered providers need (their chat models' input, cached-input,
// cache-write, output and reasoning prices, context window and output cap), converted exactly to US dollars per
// million tokens, and writes it with its source, dates and LiteLLM's licence notice. Never
// edit the output by hand: run this again.
//   node --import tsx scripts/refresh-catalogue.ts [--from URL|FILE] [--note TEXT] [--out FILE]
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { PROVIDER_KINDS, type ProviderKindId } from '../gateway/catalogue/kinds.js';
import { perMillion } from '../gateway/catalogue/decimal.js';
import type { CatalogueFile, CatalogueModel } from '../gateway/catalogue/catalogue.js';

const UPSTREAM_URL =
  'https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json';
const OUT = new URL('../gateway/catalogue/litellm-prices.json', import.meta.url);
const MAX_SOURCE_BYTES = 32 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 60_000;

const LICENCE = `MIT License

Copyright (c) 2023 Berri AI

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.`;

async function readSource(from: string): Promise<string> {
  if (!/^https?:\/\//.test(from)) return readFileSync(from, 'utf8');
  const response = await fetch(from, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`${from} answered ${response.status}`);
  const text = await response.text();
  if (text.length > MAX_SOURCE_BYTES) throw new Error(`${from} is over ${MAX_SOURCE_BYTES} bytes`);
  return text;
}

type Entry = Record<string, unknown>;

const positiveInt = (value: unknown): number | null =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
const price = (value: unknown): string | null =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? perMillion(value) : null;

/** One chat model's row, or null when it is not a chat model priced per token. */
function row(entry: Entry): CatalogueModel | null {
  if (entry.mode !== 'chat') return null;
  const input = price(entry.input_cost_per_token);
  const output = price(entry.output_cost_per_token);
  if (input === null || output === null) return null;
  const cached_input = price(entry.cache_read_input_token_cost);
  const reasoning = price(entry.output_cost_per_reasoning_token);
  const cache_write = price(entry.cache_creation_input_token_cost);
  return {
    input,
    output,
    ...(cached_input !== null ? { cached_input } : {}),
    ...(reasoning !== null ? { reasoning } : {}),
    ...(cache_write !== null ? { cache_write } : {}),
    context_window: positiveInt(entry.max_input_tokens) ?? positiveInt(entry.max_tokens),
    max_output_tokens: positiveInt(entry.max_output_tokens) ?? positiveInt(entry.max_tokens),
  };
}

function keep(source: Record<string, unknown>): CatalogueFile['models'] {
  const by_litellm = new Map<string, ProviderKindId>();
  for (const kind of PROVIDER_KINDS) if (kind.catalogue) by_litellm.set(kind.catalogue, kind.id);
  const models: Record<string, Record<string, CatalogueModel>> = {};
  // Unprefixed names first, so that "gpt-4o" wins over a duplicate "openai/gpt-4o".
  const names = Object.keys(source).sort(
    (a, b) => Number(a.includes('/')) - Number(b.includes('/')) || (a < b ? -1 : a > b ? 1 : 0),
  );
  for (const name of names) {
    const entry = source[name];
    if (!entry || typeof entry !== 'object') continue;
    const kind = by_litellm.get(String((entry as Entry).litellm_provider));
    if (!kind) continue;
    const prefix = `${(entry as Entry).litellm_provider as string}/`;
    const model = name.startsWith(prefix) ? name.slice(prefix.length) : name;
    // A fine-tuning template ("ft:gpt-4o-...") names no model anyone calls.
    if (model.startsWith('ft:') || model.length > 256) continue;
    const priced = row(entry as Entry);
    if (!priced) continue;
    models[kind] ??= {};
    if (!Object.hasOwn(models[kind], model)) models[kind][model] = priced;
  }
  const sorted: Record<string, Record<string, CatalogueModel>> = {};
  for (const kind of Object.keys(models).sort())
    sorted[kind] = Object.fromEntries(
      Object.entries(models[kind]!).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  return sorted;
}

const { values } = parseArgs({
  options: { from: { type: 'string' }, note: { type: 'string' }, out: { type: 'string' } },
});
const from = values.from ?? UPSTREAM_URL;
const text = await readSource(from);
const source = JSON.parse(text) as Record<string, unknown>;
if (!source || typeof source !== 'object' || Array.isArray(source))
  throw new Error(`${from} is not a JSON object`);
const models = keep(source);
const kept = Object.values(models).reduce((sum, list) => sum + Object.keys(list ?? {}).length, 0);
if (kept === 0) throw new Error(`${from}: no chat model of the offered providers`);
const catalogue: CatalogueFile = {
  source: 'LiteLLM model_prices_and_context_window.json (https://github.com/BerriAI/litellm)',
  retrieved_from: values.note ? `${from} (${values.note})` : from,
  source_updated: typeof source.last_updated === 'string' ? source.last_updated : null,
  generated: new Date().toISOString(),
  licence: LICENCE,
  currency: 'USD',
  prices: 'per million tokens',
  models,
};
const out = `${JSON.stringify(catalogue, null, 2)}\n`;
writeFileSync(values.out ?? OUT, out);
console.log(
  `catalogue: ${Object.keys(source).length} entries, ${Buffer.byteLength(text)} bytes in; ` +
    `${kept} chat models of ${Object.keys(models).length} providers, ${Buffer.byteLength(out)} bytes out`,
);
