import { defineProject } from 'vitest/config';
import { sharedProject } from '../../vitest.shared.ts';

const shared = sharedProject('prisma');

// The test schema's client is generated before any test (and child process) imports it.
export default defineProject({
  ...shared,
  test: { ...shared.test, globalSetup: ['./test/global-setup.ts'] },
});
