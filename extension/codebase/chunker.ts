// Code-aware chunking for the codebase index. Pure, unit-tested.
// A file is cut into top-level blocks (a line at column 0 that is not a closing bracket starts one;
// comments and decorators just above it belong to it), consecutive small blocks are packed
// together up to the chunk size, and a block larger than a chunk is cut by lines with a few lines
// of overlap, so that a question about the code near a cut still finds both halves. Every chunk
// is bounded by lines and characters; a single line longer than a chunk (minified code) is cut.

export interface Chunk {
  /** 1-based, inclusive. */
  startLine: number;
  endLine: number;
  text: string;
}

export interface ChunkOptions {
  maxLines: number;
  maxChars: number;
  /** Lines repeated at the start of the next chunk when a block is cut. */
  overlapLines: number;
  /** At most this many chunks per file (the rest of the file is not indexed). */
  maxChunks: number;
}

export const DEFAULT_CHUNK_OPTIONS: ChunkOptions = {
  maxLines: 60,
  maxChars: 1_800,
  overlapLines: 6,
  maxChunks: 400,
};

/** Lines that close a block rather than start one, at column 0. */
const CLOSER = /^(?:[}\])]|end\b|<\/|fi\b|done\b|esac\b|\*\/)/;
/** Lines that attach to the block below them: comments, doc comments, decorators, attributes. */
const ATTACHES_BELOW = /^(?:\/\/|\/\*|\*|#(?!include|define|if|else|endif)|@|--|;;|'''|"""|\[\w)/;

export function chunkText(text: string, options: Partial<ChunkOptions> = {}): Chunk[] {
  const o = { ...DEFAULT_CHUNK_OPTIONS, ...options };
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  if (lines.length > 0 && lines.at(-1) === '') lines.pop();
  const chunks: Chunk[] = [];
  const emit = (first: number, last: number): boolean => {
    if (chunks.length >= o.maxChunks) return false;
    const body = lines.slice(first, last + 1).join('\n');
    if (body.trim() !== '') chunks.push({ startLine: first + 1, endLine: last + 1, text: body });
    return chunks.length < o.maxChunks;
  };

  // Packs whole blocks [start, end) into chunks; a block too large on its own is cut by lines.
  let packStart = -1;
  let packEnd = -1;
  let packChars = 0;
  const flush = (): boolean => {
    if (packStart < 0) return true;
    const more = emit(packStart, packEnd);
    packStart = -1;
    packChars = 0;
    return more;
  };
  for (const [start, end] of blocks(lines)) {
    const chars = charsOf(lines, start, end);
    const count = end - start;
    if (count > o.maxLines || chars > o.maxChars) {
      if (!flush() || !cutByLines(lines, start, end, o, emit, chunks)) return chunks;
      continue;
    }
    if (packStart >= 0 && (end - packStart > o.maxLines || packChars + chars > o.maxChars))
      if (!flush()) return chunks;
    if (packStart < 0) packStart = start;
    packEnd = end - 1;
    packChars += chars;
  }
  flush();
  return chunks;
}

/** Characters of lines [start, end) with their line breaks. */
function charsOf(lines: string[], start: number, end: number): number {
  let chars = 0;
  for (let i = start; i < end; i++) chars += lines[i]!.length + 1;
  return chars;
}

/** The top-level blocks as [start, end) line ranges covering every line. */
export function blocks(lines: string[]): Array<[number, number]> {
  const starts: number[] = [];
  let previous = ''; // the line above (blank lines count: they separate)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const topLevel = line !== '' && !/^\s/.test(line) && !CLOSER.test(line);
    if (topLevel && (i === 0 || previous.trim() === '' || !ATTACHES_BELOW.test(previous)))
      starts.push(i);
    previous = line;
  }
  if (starts[0] !== 0) starts.unshift(0);
  return starts.map((start, i) => [start, starts[i + 1] ?? lines.length]);
}

/** Cuts lines [start, end) into windows with overlap; returns false once maxChunks is reached. */
function cutByLines(
  lines: string[],
  start: number,
  end: number,
  o: ChunkOptions,
  emit: (first: number, last: number) => boolean,
  chunks: Chunk[],
): boolean {
  let first = start;
  while (first < end) {
    if (lines[first]!.length + 1 > o.maxChars) {
      // One line longer than a chunk: its pieces, each a chunk of that one line.
      const line = lines[first]!;
      for (let at = 0; at < line.length; at += o.maxChars) {
        if (chunks.length >= o.maxChunks) return false;
        chunks.push({
          startLine: first + 1,
          endLine: first + 1,
          text: line.slice(at, at + o.maxChars),
        });
      }
      if (chunks.length >= o.maxChunks) return false;
      first++;
      continue;
    }
    let last = first;
    let chars = lines[first]!.length + 1;
    while (
      last + 1 < end &&
      last + 1 - first < o.maxLines &&
      chars + lines[last + 1]!.length + 1 <= o.maxChars
    )
      chars += lines[++last]!.length + 1;
    if (!emit(first, last)) return false;
    if (last + 1 >= end) break;
    // The next window starts a few lines back (never at or before this one's start).
    first = Math.max(
      first + 1,
      last + 1 - Math.min(o.overlapLines, Math.floor((last - first) / 2)),
    );
  }
  return true;
}

/** The text sent for a chunk's embedding: its path (file names carry meaning) and its lines. */
export function embeddingInput(path: string, chunk: Chunk): string {
  return `${path}:${chunk.startLine}-${chunk.endLine}\n${chunk.text}`;
}
