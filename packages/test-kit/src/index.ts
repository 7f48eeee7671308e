export { Backdoor, type BackdoorKey } from './backdoor.ts';
export { Child, processTestTimeout } from './child.ts';
export { type ConformanceOptions, runConformance, type SuiteName, suites } from './conformance.ts';
export {
  deferred,
  type HeldLock,
  holdLock,
  outcome,
  type PgBouncerUrls,
  type ProcessesElsewhere,
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
export { currentLane, harnessId, type Lane, listFromEnv } from './lanes.ts';
export {
  connectionSuites,
  controlSuites,
  type DriverFamily,
  entryId,
  type MatrixEntry,
  poolerSuites,
  processesElsewhere,
  resultSuites,
  runMatrixEntry,
  selectSuites,
} from './matrix.ts';
export { findPgBouncer, type PgBouncer, startPgBouncer } from './pgbouncer.ts';
export { generatePrismaClient } from './prisma-generate.ts';
export { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';
