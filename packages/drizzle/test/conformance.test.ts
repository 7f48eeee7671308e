import { runConformance } from '@pglock/test-kit';
import { nodePgClientHarness, nodePgPoolHarness, pgliteHarness, postgresJsHarness } from './harness.ts';

runConformance(nodePgPoolHarness);
runConformance(nodePgClientHarness);
runConformance(postgresJsHarness);
runConformance(pgliteHarness);
