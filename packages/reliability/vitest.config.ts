import { defineProject } from 'vitest/config';
import { sharedProject } from '../../vitest.shared.ts';

const shared = sharedProject('reliability');

// The chaos run drives the Prisma adapter through its test harness, which imports the generated client.
export default defineProject({
  ...shared,
  test: { ...shared.test, globalSetup: ['./test/global-setup.ts'] },
});
