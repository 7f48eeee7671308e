// The kit's conformance for the drizzle-orm releases of scripts/test-drizzle.sh, one harness per
// driver (the workspace's release runs every harness, through PgBouncer too): one file per harness,
// so that the run's workers take them at once (versions.kversion.ts, versions.*.kversion.ts).
import { runConformance } from '@pglock/test-kit';
import { npmVersion } from 'drizzle-orm/version';
import { describe, expect, it } from 'vitest';
import { pgliteHarness } from './harness.ts';

describe('the drizzle-orm under test', () => {
  it('is the release the run asked for', () => {
    expect(npmVersion).toBe(process.env.PGLOCK_DRIZZLE_VERSION);
  });
});

runConformance(pgliteHarness);
