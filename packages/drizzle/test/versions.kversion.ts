// The kit's conformance for the drizzle-orm releases of scripts/test-drizzle.sh, one harness per
// driver (the workspace's release runs every harness, through PgBouncer too).
import { runConformance } from '@pglock/test-kit';
import { npmVersion } from 'drizzle-orm/version';
import { describe, expect, it } from 'vitest';
import { nodePgPoolHarness, pgliteHarness, postgresJsHarness } from './harness.ts';

describe('the drizzle-orm under test', () => {
  it('is the release the run asked for', () => {
    expect(npmVersion).toBe(process.env.PGLOCK_DRIZZLE_VERSION);
  });
});

runConformance(nodePgPoolHarness);
runConformance(postgresJsHarness);
runConformance(pgliteHarness);
