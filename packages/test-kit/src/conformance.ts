import { describe } from 'vitest';
import { type ProcessesElsewhere, useSuiteContext } from './context.ts';
import type { AdapterHarness } from './harness.ts';
import { abortSuite } from './suites/abort.ts';
import { connectionEconomySuite } from './suites/connection-economy.ts';
import { diagnosticsSuite } from './suites/diagnostics.ts';
import { exclusionSuite } from './suites/exclusion.ts';
import { exportsSuite } from './suites/exports.ts';
import { faultsSuite } from './suites/faults.ts';
import { inputSuite } from './suites/input.ts';
import { keyParitySuite } from './suites/key-parity.ts';
import { leaderLeaseSuite } from './suites/leader-lease.ts';
import { leaderObserversSuite } from './suites/leader-observers.ts';
import { misuseSuite } from './suites/misuse.ts';
import { modesSuite } from './suites/modes.ts';
import { nestingSuite } from './suites/nesting.ts';
import { queueSuite } from './suites/queue.ts';
import { releaseSuite } from './suites/release.ts';
import { rolledBackSuite } from './suites/rolled-back.ts';
import { runLimitsSuite } from './suites/run-limits.ts';
import { schedulesSuite } from './suites/schedules.ts';
import { schedulingSuite } from './suites/scheduling.ts';
import { sessionLocksSuite } from './suites/session-locks.ts';
import { sharedSessionLocksSuite } from './suites/shared-session-locks.ts';
import { timeoutSuite } from './suites/timeouts.ts';
import { transactionSettingsSuite } from './suites/transaction-settings.ts';
import { verbsSuite } from './suites/verbs.ts';

/** The named suites; an adapter runs all of them (capability gaps skip with a reason). */
export const suites = {
  exclusion: exclusionSuite,
  timeouts: timeoutSuite,
  release: releaseSuite,
  modes: modesSuite,
  faults: faultsSuite,
  input: inputSuite,
  misuse: misuseSuite,
  nesting: nestingSuite,
  rolledBack: rolledBackSuite,
  abort: abortSuite,
  queue: queueSuite,
  sessionLocks: sessionLocksSuite,
  sharedSessionLocks: sharedSessionLocksSuite,
  keyParity: keyParitySuite,
  transactionSettings: transactionSettingsSuite,
  diagnostics: diagnosticsSuite,
  scheduling: schedulingSuite,
  schedules: schedulesSuite,
  leaderObservers: leaderObserversSuite,
  runLimits: runLimitsSuite,
  leaderLease: leaderLeaseSuite,
  connectionEconomy: connectionEconomySuite,
  verbs: verbsSuite,
  exports: exportsSuite,
} as const;

/** The name of one suite of the kit (`PGLOCK_SUITES` takes these). */
export type SuiteName = keyof typeof suites;

/** Where the adapter connects, when not straight to the test database. */
export interface ConformanceOptions {
  /** The URL the adapter (and its child processes) use, e.g. a PgBouncer's; checks still read `pg_locks` directly. */
  readonly url?: string | undefined;
  /** Appended to the suite name, e.g. `via PgBouncer (transaction pooling)`. */
  readonly label?: string | undefined;
  /** Run only these suites (default: all), e.g. while working on one. */
  readonly only?: readonly SuiteName[] | undefined;
  /** Leave out the tests that start worker processes, with the reason their titles show. */
  readonly processes?: ProcessesElsewhere | undefined;
}

/**
 * Registers the whole conformance suite for one adapter harness.
 *
 * @example
 * ```ts
 * import { runConformance } from '@pglock/test-kit';
 * import { poolHarness } from './harness.ts';
 *
 * runConformance(poolHarness);
 * ```
 */
export function runConformance(harness: AdapterHarness, options: ConformanceOptions = {}): void {
  describe(`conformance: ${harness.name}${options.label ? ` ${options.label}` : ''}`, () => {
    const ctx = useSuiteContext(harness, options.url, options.processes);
    for (const [name, suite] of Object.entries(suites)) {
      if (options.only === undefined || options.only.includes(name as SuiteName)) suite(ctx);
    }
  });
}
