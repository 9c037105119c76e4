// Packages the extension as dist/aihub.vsix with @vscode/vsce.
// vsce refuses a .vscodeignore next to a package.json "files" list, and "files" is the npm
// package's own whitelist (the gateway). So vsce runs in a staging copy of the repository whose
// package.json has no "files" (nor scripts and devDependencies); .vscodeignore does the filtering.
// `node scripts/vscode-package.mjs` (after the production build); prints the .vsix path and size.
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const STAGE = join(REPO, '.tools/vsix-stage');
const OUT = join(REPO, 'dist/aihub.vsix');
const MAX_VSIX_BYTES = 3 * 1024 * 1024;
const NOT_STAGED = new Set([
  '.git',
  '.tools',
  'node_modules',
  'test-results',
  'bench-results',
  '.aihub',
]);

for (const needed of ['dist/extension.cjs', 'dist/gateway.js', 'dist/webview/chat.js']) {
  if (!existsSync(join(REPO, needed)))
    throw new Error(`${needed} is missing: run the production build first`);
}

rmSync(STAGE, { recursive: true, force: true });
mkdirSync(STAGE, { recursive: true });
for (const entry of readdirSync(REPO)) {
  if (NOT_STAGED.has(entry) || entry.endsWith('.vsix')) continue;
  cpSync(join(REPO, entry), join(STAGE, entry), {
    recursive: true,
    filter: (source) => !source.endsWith('.vsix'),
  });
}
const manifest = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
delete manifest.files;
delete manifest.scripts;
delete manifest.devDependencies;
writeFileSync(join(STAGE, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

const hasLicense = ['LICENSE', 'LICENSE.md', 'LICENSE.txt'].some((name) =>
  existsSync(join(REPO, name)),
);
const vsce = join(REPO, 'node_modules/@vscode/vsce/vsce');
const args = [
  vsce,
  'package',
  '--no-dependencies',
  '--out',
  OUT,
  ...(hasLicense ? [] : ['--skip-license']),
];
const result = spawnSync(process.execPath, args, {
  cwd: STAGE,
  stdio: ['ignore', 'pipe', 'pipe'],
  encoding: 'utf8',
});
process.stdout.write(result.stdout);
process.stderr.write(result.stderr);
rmSync(STAGE, { recursive: true, force: true });
if (result.status !== 0) process.exit(result.status ?? 1);
if (/WARNING/i.test(result.stdout + result.stderr)) {
  console.error('vsce printed a warning; the package must build without warnings.');
  process.exit(1);
}
const bytes = statSync(OUT).size;
console.log(`${OUT}: ${(bytes / 1024 / 1024).toFixed(2)} MB`);
if (bytes >= MAX_VSIX_BYTES) {
  console.error(`the .vsix must stay under 3 MB`);
  process.exit(1);
}
