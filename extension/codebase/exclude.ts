// What the codebase index leaves out. Pure, unit-tested.
// - VS Code's files.exclude holds already: the files are listed with workspace.findFiles, which
//   applies it (but neither .gitignore nor search.exclude).
// - .gitignore files (every one in the folder, each for the paths below it, deeper ones taking
//   precedence, a file under an ignored directory staying ignored) and .git/info/exclude, with the
//   `ignore` package (git's own matching rules, which eslint and prettier use too).
// - aihub.codebase.exclude: more patterns in .gitignore syntax, which always win.
// - Secret files (.env and its kin, keys, credentials), whatever the rules say.
// - Binary files: by extension before reading, by content (a NUL byte, or not UTF-8) after.
import ignore, { type Ignore } from 'ignore';

/** The default of aihub.codebase.exclude (.gitignore syntax): dependencies, builds, lock files. */
export const DEFAULT_EXCLUDES: readonly string[] = [
  'node_modules/',
  'bower_components/',
  'jspm_packages/',
  '.git/',
  '.hg/',
  '.svn/',
  '.venv/',
  'venv/',
  '__pycache__/',
  '.tox/',
  '.mypy_cache/',
  '.pytest_cache/',
  '.next/',
  '.nuxt/',
  '.cache/',
  '.gradle/',
  'coverage/',
  'dist/',
  'out/',
  'target/',
  '*.min.js',
  '*.min.css',
  '*.map',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'Cargo.lock',
  'poetry.lock',
  'Pipfile.lock',
  'composer.lock',
  'Gemfile.lock',
  'go.sum',
];

/** Secret-bearing file names: never indexed, whatever the settings (the agent does not read them either). */
const SECRET_NAMES =
  /^(?:\.env(?:\..*)?|.*\.env|\.envrc|\.netrc|_netrc|\.npmrc|\.pypirc|\.git-credentials|\.htpasswd|\.pgpass|\.dockercfg|(?:credentials|secrets?)(?:\.(?:json|ya?ml|toml|ini|txt|cfg|conf|properties|xml|csv))?|.*\.secrets?|id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|.*\.(?:pem|key|p12|pfx|jks|keystore|asc|gpg|kdbx|tfvars|tfstate(?:\.backup)?)|service[-_]account.*\.json)$/i;

/** Whether a path (any separators) names a file that may hold secrets. */
export function isSecretPath(path: string): boolean {
  const name = path.split(/[\\/]/).at(-1) ?? '';
  return SECRET_NAMES.test(name);
}

const BINARY_EXTENSIONS = new Set(
  (
    'png jpg jpeg gif bmp ico icns webp avif tif tiff psd ai sketch fig xcf heic ' +
    'mp3 mp4 m4a m4v mov avi mkv webm wav flac ogg opus aac wma wmv ' +
    'zip gz tgz bz2 xz 7z rar tar jar war ear zst lz4 br ' +
    'pdf doc docx xls xlsx ppt pptx odt ods odp epub ' +
    'exe dll so dylib lib a o obj bin class pyc pyo pyd wasm node dat db sqlite sqlite3 ' +
    'woff woff2 ttf otf eot ' +
    'vsix deb rpm dmg iso img apk ipa msi pkg ' +
    'npy npz pkl pickle h5 hdf5 onnx pt pth ckpt safetensors parquet avro orc tfrecord'
  ).split(' '),
);

/** Whether the file's extension says it is binary (checked before reading it). */
export function isBinaryPath(path: string): boolean {
  const name = path.split(/[\\/]/).at(-1) ?? '';
  const dot = name.lastIndexOf('.');
  return dot > 0 && BINARY_EXTENSIONS.has(name.slice(dot + 1).toLowerCase());
}

/** The file's text, or undefined when it is binary (a NUL byte) or not UTF-8. */
export function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.subarray(0, 8_000).includes(0)) return undefined;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return text.startsWith('\uFEFF') ? text.slice(1) : text;
  } catch {
    return undefined;
  }
}

/** A folder's ignore rules: its .gitignore files and the extra patterns. Paths are folder-relative, `/`-separated. */
export class IgnoreRules {
  /** Directory ('' for the folder itself, else 'a/b') → its .gitignore rules; deeper ones later. */
  private readonly levels = new Map<string, Ignore>();
  private readonly always: Ignore;

  constructor(extra: readonly string[] = []) {
    this.always = ignore({ allowRelativePaths: true }).add(cleanPatterns(extra));
  }

  /** Adds the rules of `<dir>/.gitignore` (dir '' is the folder; .git/info/exclude goes there too). */
  addGitignore(dir: string, content: string): this {
    const key = trimSlashes(dir);
    const rules = this.levels.get(key) ?? ignore({ allowRelativePaths: true });
    rules.add(content);
    this.levels.set(key, rules);
    // decide() walks the levels shallowest first, so that deeper rules override.
    const sorted = [...this.levels.entries()].sort(
      ([a], [b]) => depthOf(a) - depthOf(b) || a.localeCompare(b),
    );
    this.levels.clear();
    for (const [dir, sortedRules] of sorted) this.levels.set(dir, sortedRules);
    return this;
  }

  /** Whether a file (folder-relative path) is left out. */
  ignores(path: string): boolean {
    const clean = trimSlashes(path);
    if (clean === '' || this.always.ignores(clean)) return true;
    const parts = clean.split('/');
    // A file under an ignored directory stays ignored, whatever a deeper rule says (as in git).
    for (let depth = 1; depth < parts.length; depth++)
      if (this.decide(parts.slice(0, depth).join('/') + '/')) return true;
    return this.decide(clean);
  }

  /** Whether the directory's .gitignore files leave it (a path ending in / for a directory) out. */
  private decide(path: string): boolean {
    let ignored = false;
    for (const [dir, rules] of this.levels) {
      if (dir !== '' && !path.startsWith(`${dir}/`)) continue;
      const relative = dir === '' ? path : path.slice(dir.length + 1);
      if (relative === '' || relative === '/') continue;
      const result = rules.test(relative);
      if (result.ignored) ignored = true;
      else if (result.unignored) ignored = false;
    }
    return ignored;
  }
}

/**
 * A glob for workspace.findFiles' `exclude` that spares it walking the big directories: the
 * plain names among the patterns (`node_modules/`, `/dist`, `.tools`) as `**\/name/**`. Only a
 * speed-up: every pattern is applied to the results by IgnoreRules anyway.
 */
export function findFilesExclude(patterns: readonly string[]): string | undefined {
  const names = new Set<string>();
  for (const raw of patterns) {
    const pattern = raw.trim();
    if (pattern === '' || pattern.startsWith('#') || pattern.startsWith('!')) continue;
    const name = trimSlashes(pattern);
    // Only a bare directory name: no glob characters, no path inside (which would need anchoring).
    if (!/^[\w.@-]+$/.test(name) || name === '.' || name === '..') continue;
    if (!pattern.endsWith('/') && /\.\w+$/.test(name) && !name.startsWith('.')) continue; // likely a file
    names.add(name);
  }
  if (names.size === 0) return undefined;
  const globs = [...names].sort().map((name) => `**/${name}/**`);
  return globs.length === 1 ? globs[0] : `{${globs.join(',')}}`;
}

/** Patterns as .gitignore lines: blank and comment entries dropped. */
function cleanPatterns(patterns: readonly string[]): string[] {
  return patterns.map((p) => p.trim()).filter((p) => p !== '' && !p.startsWith('#'));
}

function trimSlashes(path: string): string {
  return path
    .replace(/\\/g, '/')
    .replace(/^\.?\/+/, '')
    .replace(/\/+$/, '');
}

function depthOf(dir: string): number {
  return dir === '' ? 0 : dir.split('/').length;
}
