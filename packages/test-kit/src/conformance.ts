import { describe } from 'vitest';
import { useSuiteContext } from './context.ts';
import type { AdapterHarness } from './harness.ts';
import { exclusionSuite } from './suites/exclusion.ts';
import { faultsSuite } from './suites/faults.ts';
import { inputSuite } from './suites/input.ts';
import { modesSuite } from './suites/modes.ts';
import { releaseSuite } from './suites/release.ts';
import { schedulingSuite } from './suites/scheduling.ts';
import { timeoutSuite } from './suites/timeouts.ts';

/** The named suites; an adapter runs all of them (capability gaps skip with a reason). */
export const suites = {
  exclusion: exclusionSuite,
  timeouts: timeoutSuite,
  release: releaseSuite,
  modes: modesSuite,
  faults: faultsSuite,
  input: inputSuite,
  scheduling: schedulingSuite,
} as const;

/** Where the adapter connects, when not straight to the test database. */
export interface ConformanceOptions {
  /** The URL the adapter (and its child processes) use, e.g. a PgBouncer's; checks still read `pg_locks` directly. */
  readonly url?: string | undefined;
  /** Appended to the suite name, e.g. `via PgBouncer (transaction pooling)`. */
  readonly label?: string | undefined;
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
    const ctx = useSuiteContext(harness, options.url);
    for (const suite of Object.values(suites)) suite(ctx);
  });
}
