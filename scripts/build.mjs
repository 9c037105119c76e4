// One esbuild script for both programs: the gateway (ESM, run by Node or by VS Code's
// runtime as a child process) and the extension (CommonJS: VS Code loads it with require).
import * as esbuild from 'esbuild';
import { existsSync } from 'node:fs';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
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
    format: 'esm',
    // Bundled CommonJS dependencies (express) call require() for Node built-ins.
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __aihubCreateRequire } from 'node:module'; const require = __aihubCreateRequire(import.meta.url);",
    },
  },
];
if (existsSync('extension/extension.ts')) {
  builds.push({
    ...common,
    entryPoints: ['extension/extension.ts'],
    outfile: 'dist/extension.cjs',
    format: 'cjs',
    external: ['vscode'],
  });
}

if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
