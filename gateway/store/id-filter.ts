// A membership filter per id run (a Bloom filter over the run's 32-bit id hashes): "no" is
// certain, "maybe" is wrong for about 1 in 120 hashes the run does not hold. A lookup reads a
// block only of the runs whose filter says maybe, so it reads about one block whatever the
// number of runs behind it.
//
// On disk beside its run (`<run>.bloom`): a 16-byte header (magic, probes, bits, crc32 of the
// words) and the words, little-endian u32. It is derived data: written and fsynced before a
// manifest names the run; one that is missing, short or fails its checksum is built again
// from its own run, never from anything else.
import { closeSync, existsSync, fsyncSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { PRIVATE_FILE_MODE } from './private-files.js';

/** 10 bits and 7 probes per entry: about 0.8% false positives, 1.25 bytes of memory per id. */
export const FILTER_BITS_PER_ENTRY = 10;
const PROBES = 7;
const MAGIC = 0x31464241; // "ABF1"
const HEADER_BYTES = 16;

const wordsFor = (entries: number) =>
  Math.max(2, Math.ceil((entries * FILTER_BITS_PER_ENTRY) / 32));

/** murmur3's finalizer: spreads the bits of an already hashed 32-bit value. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class IdFilter {
  readonly words: Uint32Array;
  private readonly bits: number;

  private constructor(words: Uint32Array) {
    this.words = words;
    this.bits = words.length * 32;
  }

  /** An empty filter sized for `entries` ids. */
  static sized(entries: number): IdFilter {
    return new IdFilter(new Uint32Array(wordsFor(entries)));
  }

  /** Double hashing: probe i is h1 + i * h2 (h2 odd), modulo the bit count. */
  private probe(hash: number, each: (bit: number) => boolean): boolean {
    const h1 = mix(hash);
    const h2 = (mix(hash ^ 0x9e3779b9) | 1) >>> 0;
    for (let i = 0; i < PROBES; i++) if (!each((h1 + i * h2) % this.bits)) return false;
    return true;
  }

  add(hash: number): void {
    this.probe(hash, (bit) => {
      this.words[bit >>> 5]! |= 1 << (bit & 31);
      return true;
    });
  }

  /** False only when no id with this hash was added. */
  mayHold(hash: number): boolean {
    return this.probe(hash, (bit) => (this.words[bit >>> 5]! & (1 << (bit & 31))) !== 0);
  }

  /** Writes the filter to `file` and fsyncs it. */
  write(file: string): void {
    const body = Buffer.from(this.words.buffer, this.words.byteOffset, this.words.byteLength);
    const header = Buffer.alloc(HEADER_BYTES);
    header.writeUInt32LE(MAGIC, 0);
    header.writeUInt32LE(PROBES, 4);
    header.writeUInt32LE(this.bits, 8);
    header.writeUInt32LE(crc32(body), 12);
    const fd = openSync(file, 'w', PRIVATE_FILE_MODE);
    try {
      for (const bytes of [header, body]) {
        let done = 0;
        while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  /** The filter in `file` when it is whole and sized for `entries` ids; null otherwise (build it again from the run). */
  static read(file: string, entries: number): IdFilter | null {
    const expected = wordsFor(entries);
    if (!existsSync(file) || statSync(file).size !== HEADER_BYTES + expected * 4) return null;
    // The words are read straight into the filter's own array: no second copy of a filter
    // (1.25 bytes per id) is made, not even for a moment, at every start.
    const header = Buffer.alloc(HEADER_BYTES);
    const words = new Uint32Array(expected);
    const body = Buffer.from(words.buffer, words.byteOffset, words.byteLength);
    const fd = openSync(file, 'r');
    try {
      for (const [bytes, position] of [
        [header, 0],
        [body, HEADER_BYTES],
      ] as const) {
        let done = 0;
        while (done < bytes.length) {
          const n = readSync(fd, bytes, done, bytes.length - done, position + done);
          if (n === 0) return null;
          done += n;
        }
      }
    } finally {
      closeSync(fd);
    }
    if (
      header.readUInt32LE(0) !== MAGIC ||
      header.readUInt32LE(4) !== PROBES ||
      header.readUInt32LE(8) !== expected * 32 ||
      header.readUInt32LE(12) !== crc32(body)
    )
      return null;
    return new IdFilter(words);
  }
}
