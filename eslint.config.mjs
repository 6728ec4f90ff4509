// ESLint for host/, test/, bench/ and tools/ (`npm run lint`, part of `npm test`): the recommended rules
// of ESLint and typescript-eslint, syntax only (no type information, so a run takes seconds).
// Formatting is Prettier's (.prettierrc.json), checked by `npm run lint` as well.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '**/generated/**', '**/wit-types/**', '**/*.d.ts', 'sample-backends/**', 'native/**', 'third_party/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['host/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'tools/**/*.ts'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      // `_name` marks a parameter or binding kept for its position or shape.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Walking a parent chain starts from `this` (`for (let f = this; f; f = f.parent)`), and a
      // prom-client collect() callback reads its owner while `this` is the metric.
      '@typescript-eslint/no-this-alias': 'off',
    },
  },
  {
    // The web console's browser code (host/console-assets/, docs/console.md): ES modules run by the browser.
    files: ['host/console-assets/**/*.js'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'module',
      globals: { document: 'readonly', window: 'readonly', fetch: 'readonly', queueMicrotask: 'readonly', btoa: 'readonly', Event: 'readonly' },
    },
  },
  {
    // Tests and benchmarks read untyped JSON answers.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
