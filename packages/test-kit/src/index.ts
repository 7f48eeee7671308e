export { Backdoor, type BackdoorKey } from './backdoor.ts';
export { Child } from './child.ts';
export { type ConformanceOptions, runConformance, suites } from './conformance.ts';
export {
  deferred,
  type HeldLock,
  holdLock,
  outcome,
  type PgBouncerUrls,
  pidOf,
  type SuiteContext,
  type SuiteOpenOptions,
  settlesWithin,
  sleep,
  useSuiteContext,
} from './context.ts';
export { type CountingPool, type CountingPoolOptions, countingPool } from './counting-pool.ts';
export { documentedExports, scheduledExports } from './documented-exports.ts';
export { type EmbeddedServer, freePort, startEmbeddedServer } from './embedded-server.ts';
export { type LockTestFixtures, useLockTestFixtures } from './fixtures.ts';
export {
  type AdapterHarness,
  type AdapterInstance,
  type AdapterPackage,
  type AnyLocks,
  type Capabilities,
  defineHarness,
  type HarnessSetup,
  type HarnessTransaction,
  type OpenOptions,
  type Sql,
} from './harness.ts';
export { findPgBouncer, type PgBouncer, startPgBouncer } from './pgbouncer.ts';
export { generatePrismaClient } from './prisma-generate.ts';
