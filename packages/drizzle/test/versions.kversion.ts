// drizzle-orm's release under test (scripts/test-drizzle.sh) on nodePgPoolHarness: version-conformance.ts.
import { nodePgPoolHarness } from './harness.ts';
import { versionConformance } from './version-conformance.ts';

versionConformance(nodePgPoolHarness);
