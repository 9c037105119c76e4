// Builds the extension's own bundles: the extension host code (CommonJS, vscode external), the chat
// webview script (browser IIFE), and with --tests the extension-host mocha suite.
// `node scripts/vscode-build-extension.mjs [--production] [--tests] [--watch]`
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const tests = process.argv.includes('--tests');

const common = {
  bundle: true,
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'warning',
  legalComments: 'none',
};

export const extensionBuilds = [
  {
    ...common,
    entryPoints: ['extension/extension.ts'],
    outfile: 'dist/extension.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
  },
  {
    ...common,
    entryPoints: ['media/chat.ts'],
    outfile: 'dist/webview/chat.js',
    platform: 'browser',
    target: 'chrome120',
    format: 'iife',
  },
];

export const testBuilds = [
  {
    ...common,
    minify: false,
    sourcemap: 'inline',
    entryPoints: ['test/extension/suite/index.ts'],
    outfile: 'dist/test/extension/suite.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // mocha is loaded from node_modules at run time: it finds its own files on disk.
    external: ['vscode', 'mocha'],
  },
];

if (import.meta.url === `file://${process.argv[1]}`) {
  const builds = tests ? [...extensionBuilds, ...testBuilds] : extensionBuilds;
  if (watch) {
    for (const options of builds) await (await esbuild.context(options)).watch();
  } else {
    await Promise.all(builds.map((options) => esbuild.build(options)));
  }
}
