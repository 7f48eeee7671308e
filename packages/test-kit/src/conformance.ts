import { describe } from 'vitest';
import { useSuiteContext } from './context.ts';
import type { AdapterHarness } from './harness.ts';
import { exclusionSuite } from './suites/exclusion.ts';
import { faultsSuite } from './suites/faults.ts';
import { inputSuite } from './suites/input.ts';
import { modesSuite } from './suites/modes.ts';
import { releaseSuite } from './suites/release.ts';
import { timeoutSuite } from './suites/timeouts.ts';

/** The named suites; an adapter runs all of them (capability gaps skip with a reason). */
export const suites = {
  exclusion: exclusionSuite,
  timeouts: timeoutSuite,
  release: releaseSuite,
  modes: modesSuite,
  faults: faultsSuite,
  input: inputSuite,
} as const;

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
export function runConformance(harness: AdapterHarness): void {
  describe(`conformance: ${harness.name}`, () => {
    const ctx = useSuiteContext(harness);
    for (const suite of Object.values(suites)) suite(ctx);
  });
}
