// Embeddings for the built-in engine, without a model: a hashed bag of character trigrams
// and words, signed by a second hash bit, L2-normalised. Deterministic, and texts that share
// words and spellings point the same way, so retrieval code can be tested offline.
const DEFAULT_DIMENSIONS = 256;

/** FNV-1a, 32 bits. */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

function add(vector: Float64Array, feature: string, weight: number): void {
  const hash = fnv1a(feature);
  const sign = fnv1a(feature, 0x9747b28c) & 1 ? 1 : -1;
  vector[hash % vector.length]! += sign * weight;
}

export function embedText(text: string, dimensions: number = DEFAULT_DIMENSIONS): number[] {
  const vector = new Float64Array(dimensions);
  const normalised = text.toLowerCase().normalize('NFKC');
  for (const word of normalised.match(/[\p{L}\p{N}_]+/gu) ?? []) {
    add(vector, `w:${word}`, 1);
    const padded = ` ${word} `;
    for (let i = 0; i + 3 <= padded.length; i++) add(vector, `c:${padded.slice(i, i + 3)}`, 0.5);
  }
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  // An empty text has no direction: a unit vector along the first axis keeps it normalised.
  if (norm === 0) return Array.from(vector, (_, i) => (i === 0 ? 1 : 0));
  return Array.from(vector, (value) => value / norm);
}
