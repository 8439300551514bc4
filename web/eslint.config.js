// eslint.config.js - ESLint with React's rules of hooks over the editor's sources, tests and
// benchmark (`npm run lint`; `make test` runs it through ctest as test_web_lint).
import reactHooks from 'eslint-plugin-react-hooks';

export default [
  {ignores: ['dist/**', 'node_modules/**', 'screenshots/**']},
  {
    files: ['**/*.{js,jsx,mjs}'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      parserOptions: {ecmaFeatures: {jsx: true}},
    },
    plugins: {'react-hooks': reactHooks},
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
      /* components are used in JSX, which this parser does not count as a use */
      'no-unused-vars': ['error', {varsIgnorePattern: '^(React|[A-Z])', args: 'none',
                                   caughtErrors: 'none'}],
      'no-unreachable': 'error',
      'no-dupe-keys': 'error',
      'no-self-assign': 'error',
      'eqeqeq': ['error', 'smart'],
    },
  },
];
