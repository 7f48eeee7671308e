/** ts-jest's CommonJS preset, as `nest new` sets it up. */
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/locks.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.jest.json' }] },
};
