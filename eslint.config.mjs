// ESLint flat config: typescript-eslint's recommended rules over the TypeScript parts.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', 'test-output/**', '**/*.cjs', 'native/index.js', 'test/fixtures/reportSnapshot/bundle.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.mjs', 'test/**/*.js', 'bin/*.js'],
    languageOptions: { globals: { performance: 'readonly', process: 'readonly', console: 'readonly', require: 'readonly', __dirname: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', module: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
