// The codebase index on disk and in memory: one append-only log file in the extension's
// workspace storage, `codebase-index.bin`, replayed when the workspace opens. Node's fs only (no
// vscode), unit-tested.
//
// Format (little-endian):
//   header:  "AIHUBIX1" (8 bytes), u32 n, n bytes of JSON {version, model, dims}
//   records: u32 length (of what follows), u8 kind, u16 keyLength, key (UTF-8),
//            kind 1 (a file):      32-byte SHA-256 of the content, f64 size, f64 mtime,
//                                  u32 chunks, chunks × (u32 startLine, u32 endLine),
//                                  chunks × dims × f32 (unit vectors)
//            kind 2 (file gone):   nothing more
//            then u32: the first 4 bytes of the SHA-1 of kind..end, so a torn or damaged tail is
//            found (and cut off) on the next load.
// A change appends one record (the file's chunks, or its removal); the last record of a key wins.
// When superseded records outweigh the live ones (and pass 1 MiB), compact() rewrites the file
// from memory into a temp file, fsyncs it and renames it over the log.
// In memory a file is its metadata plus one Float32Array of chunks × dims: an index of C chunks
// holds C × dims × 4 bytes of vectors (256 dims: 1 KiB a chunk).
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

export const INDEX_FILE = 'codebase-index.bin';
const MAGIC = Buffer.from('AIHUBIX1', 'latin1');
const FORMAT_VERSION = 1;
const KIND_FILE = 1;
const KIND_GONE = 2;
/** A log larger than this is not read (it is rebuilt instead). */
const MAX_LOG_BYTES = 1024 * 1024 * 1024;
const COMPACT_MIN_DEAD_BYTES = 1024 * 1024;

export interface IndexedFile {
  /** The file's URI string. */
  key: string;
  /** SHA-256 of the bytes indexed, hex. */
  hash: string;
  size: number;
  mtime: number;
  /** Per chunk, 1-based inclusive [startLine, endLine], flattened: 2 × chunks. */
  lines: Uint32Array;
  /** chunks × dims unit vectors. */
  vectors: Float32Array;
}

export interface StoreIdentity {
  /** The embeddings model (tier) the vectors came from. */
  model: string;
}

export interface StoreStats {
  files: number;
  chunks: number;
  dims: number;
  /** Bytes of vectors held in memory. */
  vectorBytes: number;
  /** Bytes of the log on disk. */
  diskBytes: number;
}

export class IndexStore {
  readonly files = new Map<string, IndexedFile>();
  private handle: FileHandle | undefined;
  private diskBytes = 0;
  private liveBytes = new Map<string, number>();
  private headerBytes = 0;
  private writes: Promise<void> = Promise.resolve();
  private chunkCount = 0;

  private constructor(
    readonly dir: string,
    readonly identity: StoreIdentity,
    private currentDims: number,
  ) {}

  get path(): string {
    return join(this.dir, INDEX_FILE);
  }

  get dims(): number {
    return this.currentDims;
  }

  get chunks(): number {
    return this.chunkCount;
  }

  /**
   * Opens the log in `dir`, replaying it. A log of another model or format, or one that cannot be
   * read, is discarded: the index starts empty (`reset` tells why).
   */
  static async open(
    dir: string,
    identity: StoreIdentity,
  ): Promise<{ store: IndexStore; reset?: string }> {
    await mkdir(dir, { recursive: true });
    const store = new IndexStore(dir, identity, 0);
    let reset: string | undefined;
    try {
      reset = await store.load();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        reset = `the index could not be read (${(error as Error).message})`;
    }
    if (reset !== undefined || !store.handle) {
      store.files.clear();
      store.liveBytes.clear();
      store.chunkCount = 0;
      await store.rewrite(0);
    }
    return reset ? { store, reset } : { store };
  }

  /** Replays the log; returns why it was discarded, or undefined when it was loaded. */
  private async load(): Promise<string | undefined> {
    const info = await stat(this.path);
    if (info.size > MAX_LOG_BYTES) return 'the index file is too large';
    const bytes = await readFile(this.path);
    if (bytes.length < 12 || !bytes.subarray(0, 8).equals(MAGIC)) return 'not an index file';
    const headerLength = bytes.readUInt32LE(8);
    if (12 + headerLength > bytes.length) return 'the index header is cut short';
    let header: { version?: unknown; model?: unknown; dims?: unknown };
    try {
      header = JSON.parse(bytes.subarray(12, 12 + headerLength).toString('utf8')) as typeof header;
    } catch {
      return 'the index header is damaged';
    }
    if (header.version !== FORMAT_VERSION) return 'the index is of another format version';
    if (header.model !== this.identity.model)
      return `the embeddings model changed (${String(header.model)} → ${this.identity.model})`;
    const dims = Number(header.dims);
    if (!Number.isSafeInteger(dims) || dims < 0 || dims > 65_536)
      return 'the index header is damaged';
    this.currentDims = dims;
    this.headerBytes = 12 + headerLength;
    let offset = this.headerBytes;
    while (offset + 4 <= bytes.length) {
      const length = bytes.readUInt32LE(offset);
      const end = offset + 4 + length;
      if (length < 7 || end > bytes.length) break;
      const body = bytes.subarray(offset + 4, end - 4);
      if (!checksum(body).equals(bytes.subarray(end - 4, end))) break;
      const record = decodeRecord(body, dims);
      if (!record) break;
      if (record.kind === KIND_FILE) this.keep(record.file, end - offset);
      else this.drop(record.key);
      offset = end;
    }
    this.diskBytes = offset;
    this.handle = await open(this.path, 'r+');
    // A torn or damaged tail (a crash while appending): cut it off, the files it held are re-indexed.
    if (offset < bytes.length) await this.handle.truncate(offset);
    return undefined;
  }

  /** Sets the vectors' dimension of an empty index (the first answer tells it). */
  async setDims(dims: number): Promise<void> {
    if (dims === this.currentDims) return;
    if (this.files.size > 0) throw new Error('the index is not empty; clear() it first');
    await this.rewrite(dims);
  }

  /** Drops everything (the model's dimension changed, or a rebuild was asked for). */
  async clear(dims = 0): Promise<void> {
    await this.writes;
    this.files.clear();
    this.liveBytes.clear();
    this.chunkCount = 0;
    await this.rewrite(dims);
  }

  /** Adds or replaces a file's chunks: one appended record. */
  put(file: IndexedFile): Promise<void> {
    const chunks = file.lines.length / 2;
    if (file.vectors.length !== chunks * this.currentDims || this.currentDims === 0)
      return Promise.reject(new Error('vectors do not match the index dimension'));
    const record = encodeRecord(KIND_FILE, file, this.currentDims);
    this.keep(file, record.length);
    return this.append(record);
  }

  /** Forgets a file: one appended record. */
  remove(key: string): Promise<void> {
    if (!this.files.has(key)) return Promise.resolve();
    this.drop(key);
    return this.append(encodeRecord(KIND_GONE, { key }, this.currentDims));
  }

  /** Makes the appended records durable (once per batch of files, not per file). */
  async flush(): Promise<void> {
    await this.writes;
    await this.handle?.datasync();
  }

  /** True when superseded records outweigh the live ones: compact() would pay off. */
  get wasteful(): boolean {
    const dead = this.diskBytes - this.headerBytes - sum(this.liveBytes.values());
    return dead > COMPACT_MIN_DEAD_BYTES && dead > this.diskBytes / 2;
  }

  /** Rewrites the log with only the live records (temp file, fsync, rename). */
  async compact(): Promise<void> {
    await this.writes;
    await this.rewrite(this.currentDims, [...this.files.values()]);
  }

  stats(): StoreStats {
    return {
      files: this.files.size,
      chunks: this.chunkCount,
      dims: this.currentDims,
      vectorBytes: this.chunkCount * this.currentDims * 4,
      diskBytes: this.diskBytes,
    };
  }

  async close(): Promise<void> {
    await this.writes.catch(() => undefined);
    await this.handle?.close();
    this.handle = undefined;
  }

  /** Closes and deletes the index from disk. */
  async destroy(): Promise<void> {
    await this.close();
    this.files.clear();
    this.liveBytes.clear();
    this.chunkCount = 0;
    await rm(this.path, { force: true });
    await rm(`${this.path}.tmp`, { force: true });
  }

  private keep(file: IndexedFile, recordBytes: number): void {
    this.drop(file.key);
    this.files.set(file.key, file);
    this.liveBytes.set(file.key, recordBytes);
    this.chunkCount += file.lines.length / 2;
  }

  private drop(key: string): void {
    const known = this.files.get(key);
    if (!known) return;
    this.chunkCount -= known.lines.length / 2;
    this.files.delete(key);
    this.liveBytes.delete(key);
  }

  private append(record: Buffer): Promise<void> {
    const write = this.writes.then(async () => {
      if (!this.handle) throw new Error('the index is closed');
      await this.handle.write(record, 0, record.length, this.diskBytes);
      this.diskBytes += record.length;
    });
    this.writes = write.catch(() => undefined);
    return write;
  }

  /** Writes a new log (header and the given files) beside the old one and renames it over it. */
  private async rewrite(dims: number, files: IndexedFile[] = []): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
    const header = Buffer.from(
      JSON.stringify({ version: FORMAT_VERSION, model: this.identity.model, dims }),
    );
    const head = Buffer.alloc(12);
    MAGIC.copy(head);
    head.writeUInt32LE(header.length, 8);
    const temp = `${this.path}.tmp`;
    const out = await open(temp, 'w');
    let size = 0;
    try {
      const write = async (buffer: Buffer): Promise<void> => {
        await out.write(buffer, 0, buffer.length, size);
        size += buffer.length;
      };
      await write(head);
      await write(header);
      this.liveBytes.clear();
      for (const file of files) {
        const record = encodeRecord(KIND_FILE, file, dims);
        this.liveBytes.set(file.key, record.length);
        await write(record);
      }
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(temp, this.path);
    this.currentDims = dims;
    this.headerBytes = 12 + header.length;
    this.diskBytes = size;
    this.handle = await open(this.path, 'r+');
  }
}

function sum(values: Iterable<number>): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}

function checksum(body: Uint8Array): Buffer {
  return createHash('sha1').update(body).digest().subarray(0, 4);
}

function encodeRecord(kind: number, file: IndexedFile | { key: string }, dims: number): Buffer {
  const key = Buffer.from(file.key, 'utf8');
  if (key.length > 0xffff) throw new Error('the file key is too long');
  let bodyLength = 1 + 2 + key.length;
  const full = kind === KIND_FILE ? (file as IndexedFile) : undefined;
  const chunks = full ? full.lines.length / 2 : 0;
  if (full) bodyLength += 32 + 8 + 8 + 4 + chunks * 8 + chunks * dims * 4;
  const record = Buffer.alloc(4 + bodyLength + 4);
  record.writeUInt32LE(bodyLength + 4, 0);
  let at = 4;
  at = record.writeUInt8(kind, at);
  at = record.writeUInt16LE(key.length, at);
  at += key.copy(record, at);
  if (full) {
    const hash = Buffer.from(full.hash, 'hex');
    if (hash.length !== 32) throw new Error('the content hash is not a SHA-256');
    at += hash.copy(record, at);
    at = record.writeDoubleLE(full.size, at);
    at = record.writeDoubleLE(full.mtime, at);
    at = record.writeUInt32LE(chunks, at);
    for (const line of full.lines) at = record.writeUInt32LE(line, at);
    for (const value of full.vectors) at = record.writeFloatLE(value, at);
  }
  checksum(record.subarray(4, at)).copy(record, at);
  return record;
}

type Decoded =
  { kind: typeof KIND_FILE; file: IndexedFile } | { kind: typeof KIND_GONE; key: string };

function decodeRecord(body: Buffer, dims: number): Decoded | undefined {
  const kind = body.readUInt8(0);
  const keyLength = body.readUInt16LE(1);
  if (3 + keyLength > body.length) return undefined;
  const key = body.subarray(3, 3 + keyLength).toString('utf8');
  if (kind === KIND_GONE) return { kind, key };
  if (kind !== KIND_FILE) return undefined;
  let at = 3 + keyLength;
  if (at + 52 > body.length) return undefined;
  const hash = body.subarray(at, at + 32).toString('hex');
  at += 32;
  const size = body.readDoubleLE(at);
  const mtime = body.readDoubleLE(at + 8);
  const chunks = body.readUInt32LE(at + 16);
  at += 20;
  if (at + chunks * 8 + chunks * dims * 4 !== body.length) return undefined;
  const lines = new Uint32Array(chunks * 2);
  for (let i = 0; i < lines.length; i++, at += 4) lines[i] = body.readUInt32LE(at);
  const vectors = new Float32Array(chunks * dims);
  for (let i = 0; i < vectors.length; i++, at += 4) vectors[i] = body.readFloatLE(at);
  return { kind, file: { key, hash, size, mtime, lines, vectors } };
}
