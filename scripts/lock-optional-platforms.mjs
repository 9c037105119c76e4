#!/usr/bin/env node
// Fills package-lock.json with the platform packages the npm registry here does not serve.
//
// The coding agents (opencode-ai, ...) ship their native binaries as optional dependencies,
// one package per platform. The registry this project's machines and CI reach lacks some of
// them (opencode-darwin-arm64, opencode-windows-x64@1.18.33, ...); `npm install` leaves those
// out of the lock, and `npm ci` then refuses the lock ("Missing: opencode-darwin-arm64@ from
// lock file"). This script adds an entry for each such package, with the `os`, `cpu` and
// `libc` its name says, so that `npm ci` accepts the lock and skips the package on every
// other platform (it never fetches one that does not match). Run it after every `npm
// install` that touches an agent: `node scripts/lock-optional-platforms.mjs` (it prints what
// it added; `--check` only reports, exit 1 if something is missing).
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const LOCK = resolve(import.meta.dirname, '../package-lock.json');
const OS = {
  darwin: 'darwin',
  linux: 'linux',
  win32: 'win32',
  windows: 'win32',
  freebsd: 'freebsd',
  android: 'android',
};
const CPU = { x64: 'x64', arm64: 'arm64', ia32: 'ia32', arm: 'arm' };

/** The os, cpu and libc a platform package's name says (`opencode-linux-x64-baseline-musl`). */
export function platformOf(name) {
  const parts = name.replace(/^@[^/]+\//, '').split('-');
  const os = parts.map((p) => OS[p]).find(Boolean);
  const cpu = parts.map((p) => CPU[p]).find(Boolean);
  if (!os || !cpu) return null;
  return { os: [os], cpu: [cpu], ...(parts.includes('musl') ? { libc: ['musl'] } : {}) };
}

/** The optional dependencies a lock names but has no entry for, with the entry each needs. */
export function missingPlatforms(lock) {
  const packages = lock.packages ?? {};
  const missing = [];
  for (const [path, entry] of Object.entries(packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      const base = path ? `${path}/node_modules/${name}` : `node_modules/${name}`;
      if (packages[base] || packages[`node_modules/${name}`]) continue;
      const platform = platformOf(name);
      missing.push({
        key: `node_modules/${name}`,
        name,
        entry: platform && {
          version,
          ...platform,
          ...(entry.dev ? { dev: true } : {}),
          optional: true,
        },
      });
    }
  }
  return missing;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const lock = JSON.parse(readFileSync(LOCK, 'utf8'));
  const missing = missingPlatforms(lock);
  const unknown = missing.filter((m) => !m.entry);
  for (const m of unknown)
    console.error(`cannot tell the platform of ${m.name}: add its entry by hand`);
  if (process.argv.includes('--check')) {
    for (const m of missing) console.error(`package-lock.json has no entry for ${m.name}`);
    process.exit(missing.length ? 1 : 0);
  }
  for (const m of missing.filter((m) => m.entry)) {
    lock.packages[m.key] = m.entry;
    console.log(`added ${m.key} ${JSON.stringify(m.entry)}`);
  }
  // npm's own order: the root first, then by path in English collation
  const sorted = Object.entries(lock.packages).sort(([a], [b]) =>
    a === '' ? -1 : b === '' ? 1 : a.localeCompare(b, 'en'),
  );
  lock.packages = Object.fromEntries(sorted);
  writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
  process.exit(unknown.length ? 1 : 0);
}
