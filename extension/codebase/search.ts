// Similarity search over the index's vectors. Pure, unit-tested.
// Vectors are stored as unit vectors, so cosine similarity is a dot product: a query costs
// chunks × dims multiply-adds (20,000 chunks of 256 dimensions: about 5 million, some 20 ms
// here: see npm run bench:codebase) and keeps only the best `limit` in a bounded list.

export interface VectorFile {
  key: string;
  /** chunks × dims. */
  vectors: Float32Array;
}

export interface Scored {
  key: string;
  /** Index of the chunk within its file. */
  chunk: number;
  score: number;
}

/** Scales `vector` to unit length in place (a zero vector stays zero); returns it. */
export function normalize(vector: Float32Array): Float32Array {
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  if (norm > 0 && Number.isFinite(norm)) for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

/** The `limit` chunks most similar to `query` (a unit vector of `dims`), best first. */
export function topK(
  query: Float32Array,
  files: Iterable<VectorFile>,
  dims: number,
  limit: number,
): Scored[] {
  if (query.length !== dims || limit <= 0) return [];
  const best: Scored[] = [];
  let floor = -Infinity;
  for (const file of files) {
    const vectors = file.vectors;
    const chunks = Math.floor(vectors.length / dims);
    for (let c = 0, base = 0; c < chunks; c++, base += dims) {
      let score = 0;
      for (let d = 0; d < dims; d++) score += query[d]! * vectors[base + d]!;
      if (best.length === limit && score <= floor) continue;
      // Insert in order (the list is at most `limit` long); ties keep the earlier chunk first.
      let at = best.length;
      while (at > 0 && best[at - 1]!.score < score) at--;
      best.splice(at, 0, { key: file.key, chunk: c, score });
      if (best.length > limit) best.pop();
      floor = best.length === limit ? best.at(-1)!.score : -Infinity;
    }
  }
  return best;
}
