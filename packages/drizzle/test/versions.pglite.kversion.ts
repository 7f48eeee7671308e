// drizzle-orm's release under test (scripts/test-drizzle.sh) on pgliteHarness: version-conformance.ts.
import { pgliteHarness } from './harness.ts';
import { versionConformance } from './version-conformance.ts';

versionConformance(pgliteHarness);
