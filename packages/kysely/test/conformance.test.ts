import { runConformance } from '@pglock/test-kit';
import { pgliteHarness, postgresDialectHarness, postgresJsHarness } from './harness.ts';

runConformance(postgresDialectHarness);
runConformance(postgresJsHarness);
runConformance(pgliteHarness);
