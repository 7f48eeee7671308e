// drizzle-orm's release under test (scripts/test-drizzle.sh) on postgresJsHarness: version-conformance.ts.
import { postgresJsHarness } from './harness.ts';
import { versionConformance } from './version-conformance.ts';

versionConformance(postgresJsHarness);
