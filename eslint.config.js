// `npm run lint`: ESLint's recommended rules and typescript-eslint's, over the gateway, the
// extension, its webview assets, the tests and the scripts. Formatting is Prettier's job
// (`npm run format`), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/**', 'node_modules/**', '.tools/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        performance: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        fetch: 'readonly',
        Headers: 'readonly',
        Response: 'readonly',
        Request: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
      },
    },
    rules: {
      // Deliberate: unused arguments keep a callback's signature readable when prefixed with _.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // A default before a try that may replace it reads better than a let without one.
      'no-useless-assignment': 'off',
      // `cond ? a() : b()` and `x && f()` as statements are used on purpose.
      '@typescript-eslint/no-unused-expressions': [
        'error',
        { allowShortCircuit: true, allowTernary: true },
      ],
      // Functions stay under 70 lines (TigerStyle); a warning lists the ones still over.
      'max-lines-per-function': ['warn', { max: 70, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['test/**'],
    rules: {
      // Test replies are JSON of any shape.
      '@typescript-eslint/no-explicit-any': 'off',
      // Tests group cases in functions longer than a screen.
      'max-lines-per-function': 'off',
    },
  },
);
