import { defineProject } from 'vitest/config';
import { sharedProject } from '../../vitest.shared.ts';

const shared = sharedProject('test-kit');

// The matrix test imports every adapter's harness, Prisma's with its generated client: generate it first.
export default defineProject({
  ...shared,
  test: { ...shared.test, globalSetup: ['../prisma/test/global-setup.ts'] },
});
