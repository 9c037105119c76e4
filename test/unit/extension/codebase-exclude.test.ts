import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_EXCLUDES,
  decodeText,
  findFilesExclude,
  IgnoreRules,
  isBinaryPath,
  isSecretPath,
} from '../../../extension/codebase/exclude.js';

test('.env-like and key files are secret; ordinary source files are not', () => {
  for (const path of [
    '.env',
    'app/.env.local',
    '.env.production',
    'prod.env',
    '.envrc',
    'config\\.npmrc',
    '.netrc',
    '.git-credentials',
    'credentials',
    'aws/credentials.json',
    'secrets.yaml',
    'deploy/server.pem',
    'tls/private.key',
    'id_rsa',
    '.ssh/id_ed25519.pub',
    'infra/prod.tfvars',
    'terraform.tfstate',
    'gcp/service-account-prod.json',
  ])
    assert.equal(isSecretPath(path), true, path);
  for (const path of [
    'src/env.ts',
    'src/environment.ts',
    'secrets.ts',
    'docs/credentials.md',
    'keyboard.ts',
    'src/monkey.py',
    'README.md',
    'environment.yml',
  ])
    assert.equal(isSecretPath(path), false, path);
});

test('binary files are known by extension before reading and by content after', () => {
  assert.equal(isBinaryPath('assets/logo.PNG'), true);
  assert.equal(isBinaryPath('lib/x.wasm'), true);
  assert.equal(isBinaryPath('src/main.ts'), false);
  assert.equal(isBinaryPath('Makefile'), false);
  assert.equal(isBinaryPath('.png'), false, 'a dot file is named, not typed');
  assert.equal(decodeText(new TextEncoder().encode('héllo')), 'héllo');
  assert.equal(decodeText(Uint8Array.of(0xef, 0xbb, 0xbf, 0x61)), 'a', 'a BOM is dropped');
  assert.equal(decodeText(Uint8Array.of(0x61, 0, 0x62)), undefined, 'a NUL byte: binary');
  assert.equal(decodeText(Uint8Array.of(0xff, 0xfe, 0x41)), undefined, 'not UTF-8');
});

test('.gitignore rules: patterns, negation, anchoring, directories', () => {
  const rules = new IgnoreRules().addGitignore('', 'build/\n*.log\n!keep.log\n/root-only.txt\n');
  assert.equal(rules.ignores('build/x.js'), true);
  assert.equal(rules.ignores('src/build/x.js'), true, 'a directory name matches at any depth');
  assert.equal(rules.ignores('debug.log'), true);
  assert.equal(rules.ignores('logs/keep.log'), false, 'negated');
  assert.equal(rules.ignores('root-only.txt'), true);
  assert.equal(rules.ignores('sub/root-only.txt'), false, 'anchored to the folder');
  assert.equal(rules.ignores('src/main.ts'), false);
});

test('nested .gitignore files apply below their folder, deeper ones override', () => {
  const rules = new IgnoreRules()
    .addGitignore('pkg', '*.gen.ts\n!keep.gen.ts\n')
    .addGitignore('', '*.gen.ts\ntmp/\n')
    .addGitignore('pkg/sub', '!*.gen.ts\n');
  assert.equal(rules.ignores('a.gen.ts'), true);
  assert.equal(rules.ignores('pkg/a.gen.ts'), true);
  assert.equal(rules.ignores('pkg/keep.gen.ts'), false, 'pkg/.gitignore re-includes it');
  assert.equal(rules.ignores('pkg/sub/a.gen.ts'), false, 'the deepest rule wins');
  assert.equal(rules.ignores('other/x.ts'), false);
  const scoped = new IgnoreRules().addGitignore('pkg', 'local.txt\n');
  assert.equal(scoped.ignores('pkg/local.txt'), true);
  assert.equal(scoped.ignores('local.txt'), false, 'not above its folder');
});

test('a file under an ignored directory stays ignored, whatever a deeper rule says', () => {
  const rules = new IgnoreRules()
    .addGitignore('', 'tmp/\n')
    .addGitignore('tmp', '!important.txt\n');
  assert.equal(rules.ignores('tmp/important.txt'), true);
});

test('the extra patterns (aihub.codebase.exclude) always win over .gitignore negations', () => {
  const rules = new IgnoreRules(DEFAULT_EXCLUDES).addGitignore('', '!node_modules/\n!dist/\n');
  assert.equal(rules.ignores('node_modules/left-pad/index.js'), true);
  assert.equal(rules.ignores('web/node_modules/x.js'), true);
  assert.equal(rules.ignores('dist/app.js'), true);
  assert.equal(rules.ignores('package-lock.json'), true);
  assert.equal(rules.ignores('lib/app.min.js'), true);
  assert.equal(rules.ignores('src/dist.ts'), false);
  assert.equal(rules.ignores('src/app.ts'), false);
  const none = new IgnoreRules(['', '# a comment', '  ']);
  assert.equal(none.ignores('src/app.ts'), false);
});

test("findFiles' exclude glob names only plain directories, never a file or a path", () => {
  assert.equal(
    findFilesExclude([
      'node_modules/',
      '/dist',
      '.tools',
      '*.log',
      'a/b/',
      '!keep/',
      '# c',
      'README.md',
      '.venv/',
    ]),
    '{**/.tools/**,**/.venv/**,**/dist/**,**/node_modules/**}',
  );
  assert.equal(findFilesExclude(['x/']), '**/x/**');
  assert.equal(findFilesExclude(['*.log']), undefined);
});
