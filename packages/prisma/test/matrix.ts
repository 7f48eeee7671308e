import { type MatrixEntry, poolerSuites } from '@pglock/test-kit';
import { prismaHarness } from './harness.ts';

/** @pglock/prisma's rows of the test matrix (lanes: packages/test-kit/src/lanes.ts); one test file each. */
export const matrix = {
  /** Prisma 7 over @prisma/adapter-pg: the whole kit. */
  prisma: { harness: prismaHarness, suites: 'all', primary: true, family: 'prisma', leadsFamily: true },
  /** Through PgBouncer (transaction mode): the pooler suites (pg's Pool runs the whole kit through it). */
  prismaViaPgBouncer: { harness: prismaHarness, suites: poolerSuites, viaPgBouncer: true },
} as const satisfies Record<string, MatrixEntry>;
