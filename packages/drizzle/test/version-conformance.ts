// The kit's conformance for the drizzle-orm releases of scripts/test-drizzle.sh, one harness per
// driver (the workspace's release runs every harness, through PgBouncer too), one file per harness
// (versions*.kversion.ts) so that the run's workers take them at once.
import { type AdapterHarness, runConformance } from '@pglock/test-kit';
import { npmVersion } from 'drizzle-orm/version';
import { describe, expect, it } from 'vitest';

/** Checks that the run loads the drizzle-orm it names, then runs the kit on `harness`. */
export function versionConformance(harness: AdapterHarness): void {
  describe('the drizzle-orm under test', () => {
    it('is the release the run asked for', () => {
      expect(npmVersion).toBe(process.env.PGLOCK_DRIZZLE_VERSION);
    });
  });
  runConformance(harness);
}
