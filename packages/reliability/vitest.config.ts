import { defineProject } from 'vitest/config';
import { sharedProject } from '../../vitest.shared.ts';

const shared = sharedProject('reliability');

// The Prisma subject (src/subjects.ts) imports this package's own generated client: generate it first.
export default defineProject({
  ...shared,
  test: { ...shared.test, globalSetup: ['./test/global-setup.ts'] },
});
