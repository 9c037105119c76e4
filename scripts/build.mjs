// The one esbuild script. `node scripts/build.mjs [--production] [--tests] [--watch]`
// - dist/gateway.js: the gateway, an ES module with every dependency bundled (npm pack
//   ships this one file; the extension runs it as a child process);
// - dist/extension.cjs: the extension, CommonJS because VS Code loads it with require,
//   `vscode` external;
// - dist/webview/chat.js: the chat webview's script, a browser IIFE;
// - with --tests, dist/test/extension/suite.cjs: the extension-host mocha suite.
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

const builds = [
  {
    ...common,
    entryPoints: ['gateway/main.ts'],
    outfile: 'dist/gateway.js',
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // Bundled CommonJS dependencies (express) call require() for Node built-ins.
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __aihubCreateRequire } from 'node:module'; const require = __aihubCreateRequire(import.meta.url);",
    },
  },
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

if (tests) {
  builds.push({
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
  });
}

if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
