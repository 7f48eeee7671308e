/**
 * Jest for TypeScript 7, where ts-jest 29 cannot go: @swc/jest compiles each file to CommonJS without
 * type information (the types are checked by TypeScript 7's `tsc -p tsconfig.jest.json` beside it).
 */
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/locks.test.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
};
